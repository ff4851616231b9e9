/*
 * test_toml.c - lib/conf/toml: valid documents with their values checked, and
 * invalid ones with the line, column and message of the error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cmocka.h>

#include "conf/toml.h"

#define MAX_LEN (1024 * 1024)

/*
 * A path into the tree: parts separated by '/', "#n" indexes an array.
 * Returns NULL when any step is missing.
 */
static const struct toml_value *
get_path(const struct toml_value *v, const char *path)
{
	char part[128];

	while (v && *path) {
		size_t n = strcspn(path, "/");

		assert_true(n < sizeof(part));
		memcpy(part, path, n);
		part[n] = '\0';
		path += n + (path[n] == '/');
		if (part[0] == '#')
			v = toml_array_at(v, strtoul(part + 1, NULL, 10));
		else
			v = toml_table_get(v, part);
	}
	return v;
}

/* What one path must hold.  kind: 's' string, 'i' int, 'f' float,
 * 'b' bool, 'n' nan, 'a' array of count n, 't' table of count n. */
struct expect {
	const char *path;
	char kind;
	const char *s;
	int64_t i;
	double f;
};

struct valid_case {
	const char *name;
	const char *doc;
	struct expect ex[10];
};

static const struct valid_case valid[] = {
	{"empty", "", {{"", 't', NULL, 0, 0}}},
	{"comments and blank lines",
	 "# top\n\n  \t\na = 1 # trailing\n# end",
	 {{"a", 'i', NULL, 1, 0}, {"", 't', NULL, 1, 0}}},
	{"crlf",
	 "a = 1\r\nb = 'x'\r\n",
	 {{"a", 'i', NULL, 1, 0}, {"b", 's', "x", 0, 0}}},
	{"bare and quoted keys",
	 "bare_key-1 = 1\n\"quoted key\" = 2\n'lit.key' = 3\n1234 = 4\n\"\" = "
	 "5",
	 {{"bare_key-1", 'i', NULL, 1, 0},
	  {"quoted key", 'i', NULL, 2, 0},
	  {"lit.key", 'i', NULL, 3, 0},
	  {"1234", 'i', NULL, 4, 0},
	  {"", 't', NULL, 5, 0}}},
	{"dotted keys",
	 "a.b.c = 1\na.b.d = 2\n\"x\" . 'y' = 3\n3.14 = 4",
	 {{"a/b/c", 'i', NULL, 1, 0},
	  {"a/b/d", 'i', NULL, 2, 0},
	  {"x/y", 'i', NULL, 3, 0},
	  {"3/14", 'i', NULL, 4, 0}}},
	{"tables",
	 "[a]\nx = 1\n[a.b]\ny = 2\n[ c . \"d e\" ]\nz = 3",
	 {{"a/x", 'i', NULL, 1, 0},
	  {"a/b/y", 'i', NULL, 2, 0},
	  {"c/d e/z", 'i', NULL, 3, 0},
	  {"", 't', NULL, 2, 0}}},
	{"implicit super-table defined later",
	 "[x.y.z]\na = 1\n[x]\nb = 2",
	 {{"x/y/z/a", 'i', NULL, 1, 0}, {"x/b", 'i', NULL, 2, 0}}},
	{"sub-table under dotted keys (TOML 1.0 example)",
	 "[fruit]\napple.color = 'red'\n[fruit.apple.texture]\nsmooth = "
	 "true",
	 {{"fruit/apple/color", 's', "red", 0, 0},
	  {"fruit/apple/texture/smooth", 'b', NULL, 1, 0}}},
	{"array of tables",
	 "[[p]]\nn = 1\n[[p]]\nn = 2\n[p.sub]\nk = 3\n[[p.list]]\nq = 4",
	 {{"p", 'a', NULL, 2, 0},
	  {"p/#0/n", 'i', NULL, 1, 0},
	  {"p/#1/n", 'i', NULL, 2, 0},
	  {"p/#1/sub/k", 'i', NULL, 3, 0},
	  {"p/#1/list/#0/q", 'i', NULL, 4, 0}}},
	{"basic string escapes",
	 "s = \"a\\tb\\n\\\"q\\\" \\\\ \\b\\f\\r\"\nu = \"\\u00e9\\U0001F600\"",
	 {{"s", 's', "a\tb\n\"q\" \\ \b\f\r", 0, 0},
	  {"u", 's', "\xc3\xa9\xf0\x9f\x98\x80", 0, 0}}},
	{"escapes to 3-byte utf-8 and raw 4-byte utf-8",
	 "a = \"\\u20AC \\u007f\"\nb = '\xf0\x9f\x98\x80'",
	 {{"a", 's', "\xe2\x82\xac \x7f", 0, 0},
	  {"b", 's', "\xf0\x9f\x98\x80", 0, 0}}},
	{"crlf after multi-line opening",
	 "a = \"\"\"\r\nx\"\"\"\nb = '''\r\ny'''",
	 {{"a", 's', "x", 0, 0}, {"b", 's', "y", 0, 0}}},
	{"utf-8 text kept",
	 "s = \"h\xc3\xa9llo \xe2\x82\xac\"",
	 {{"s", 's', "h\xc3\xa9llo \xe2\x82\xac", 0, 0}}},
	{"literal strings",
	 "a = 'C:\\path\\n'\nb = '\"quoted\"'\nc = ''",
	 {{"a", 's', "C:\\path\\n", 0, 0},
	  {"b", 's', "\"quoted\"", 0, 0},
	  {"c", 's', "", 0, 0}}},
	{"multi-line basic",
	 "a = \"\"\"\nline1\nline2\"\"\"\nb = \"\"\"one \\\n   \n  two\"\"\"\n"
	 "c = \"\"\"q\"\"\"\"\"\nd = \"\"\"\"\"\"\ne = \"\"\"x\r\ny\"\"\"",
	 {{"a", 's', "line1\nline2", 0, 0},
	  {"b", 's', "one two", 0, 0},
	  {"c", 's', "q\"\"", 0, 0},
	  {"d", 's', "", 0, 0},
	  {"e", 's', "x\ny", 0, 0}}},
	{"multi-line literal",
	 "a = '''\nraw \\n\n'''\nb = ''''x''''\nc = '''a''b'''",
	 {{"a", 's', "raw \\n\n", 0, 0},
	  {"b", 's', "'x'", 0, 0},
	  {"c", 's', "a''b", 0, 0}}},
	{"integers",
	 "a = 42\nb = +17\nc = -5\nd = 1_000_000\ne = 0\nf = -0\n"
	 "g = 0xDEAD_beef\nh = 0o755\ni = 0b1101\nj = 0x7fffffffffffffff",
	 {{"a", 'i', NULL, 42, 0},
	  {"b", 'i', NULL, 17, 0},
	  {"c", 'i', NULL, -5, 0},
	  {"d", 'i', NULL, 1000000, 0},
	  {"e", 'i', NULL, 0, 0},
	  {"f", 'i', NULL, 0, 0},
	  {"g", 'i', NULL, 0xDEADBEEF, 0},
	  {"h", 'i', NULL, 0755, 0},
	  {"i", 'i', NULL, 13, 0},
	  {"j", 'i', NULL, INT64_MAX, 0}}},
	{"integer limits",
	 "max = 9223372036854775807\nmin = -9223372036854775808",
	 {{"max", 'i', NULL, INT64_MAX, 0}, {"min", 'i', NULL, INT64_MIN, 0}}},
	{"floats",
	 "a = 1.5\nb = -0.25\nc = 5e+2\nd = 1E-2\ne = 6.626e-34\n"
	 "f = 9_224.5_1\ng = 0.0\nh = 0e0\ni = +1.5",
	 {{"a", 'f', NULL, 0, 1.5},
	  {"b", 'f', NULL, 0, -0.25},
	  {"c", 'f', NULL, 0, 500},
	  {"d", 'f', NULL, 0, 0.01},
	  {"e", 'f', NULL, 0, 6.626e-34},
	  {"f", 'f', NULL, 0, 9224.51},
	  {"g", 'f', NULL, 0, 0},
	  {"h", 'f', NULL, 0, 0},
	  {"i", 'f', NULL, 0, 1.5}}},
	{"inf and nan",
	 "a = inf\nb = -inf\nc = +inf\nd = nan\ne = -nan",
	 {{"a", 'f', NULL, 0, INFINITY},
	  {"b", 'f', NULL, 0, -INFINITY},
	  {"c", 'f', NULL, 0, INFINITY},
	  {"d", 'n', NULL, 0, 0},
	  {"e", 'n', NULL, 0, 0}}},
	{"booleans",
	 "t = true\nf = false",
	 {{"t", 'b', NULL, 1, 0}, {"f", 'b', NULL, 0, 0}}},
	{"arrays",
	 "a = []\nb = [1, 2, 3,]\nc = [ [1], ['x', \"y\"], [] ]\n"
	 "d = [1, 'mixed', 2.5, true, {k = 1}]\n"
	 "e = [\n  1, # one\n\n  2 # two\n  ,\n]",
	 {{"a", 'a', NULL, 0, 0},
	  {"b", 'a', NULL, 3, 0},
	  {"b/#2", 'i', NULL, 3, 0},
	  {"c/#1/#1", 's', "y", 0, 0},
	  {"c/#2", 'a', NULL, 0, 0},
	  {"d/#1", 's', "mixed", 0, 0},
	  {"d/#3", 'b', NULL, 1, 0},
	  {"d/#4/k", 'i', NULL, 1, 0},
	  {"e", 'a', NULL, 2, 0},
	  {"e/#1", 'i', NULL, 2, 0}}},
	{"inline tables",
	 "a = {}\nb = { x = 1, y.z = 'q', w = [1, {v = true}] }\n"
	 "c = {n = {m = 2}}",
	 {{"a", 't', NULL, 0, 0},
	  {"b", 't', NULL, 3, 0},
	  {"b/y/z", 's', "q", 0, 0},
	  {"b/w/#1/v", 'b', NULL, 1, 0},
	  {"c/n/m", 'i', NULL, 2, 0}}},
	{"byte order mark skipped",
	 "\xEF\xBB\xBF"
	 "a = 1",
	 {{"a", 'i', NULL, 1, 0}}},
	{"no newline at end", "[t]\na = 'x'", {{"t/a", 's', "x", 0, 0}}},
};

static void
check_expect(const char *name, const struct toml_value *root,
	     const struct expect *e)
{
	const struct toml_value *v = get_path(root, e->path);

	if (!v)
		fail_msg("%s: %s missing", name, e->path);
	switch (e->kind) {
	case 's':
		if (toml_type(v) != TOML_STRING ||
		    strcmp(toml_string(v), e->s) != 0)
			fail_msg("%s: %s: want string \"%s\", got \"%s\"", name,
				 e->path, e->s,
				 toml_string(v) ? toml_string(v) : "(none)");
		assert_int_equal(toml_string_len(v), strlen(e->s));
		break;
	case 'i':
		if (toml_type(v) != TOML_INT || toml_int(v) != e->i)
			fail_msg("%s: %s: want %lld, got type %s value %lld",
				 name, e->path, (long long)e->i,
				 toml_type_name(toml_type(v)),
				 (long long)toml_int(v));
		break;
	case 'f':
		if (toml_type(v) != TOML_FLOAT || toml_float(v) != e->f)
			fail_msg("%s: %s: want %g, got type %s value %g", name,
				 e->path, e->f, toml_type_name(toml_type(v)),
				 toml_float(v));
		break;
	case 'n':
		if (toml_type(v) != TOML_FLOAT || !isnan(toml_float(v)))
			fail_msg("%s: %s: want nan", name, e->path);
		break;
	case 'b':
		if (toml_type(v) != TOML_BOOL || toml_bool(v) != (e->i != 0))
			fail_msg("%s: %s: want %s", name, e->path,
				 e->i ? "true" : "false");
		break;
	case 'a':
		if (toml_type(v) != TOML_ARRAY ||
		    toml_array_count(v) != (size_t)e->i)
			fail_msg("%s: %s: want array of %lld", name, e->path,
				 (long long)e->i);
		break;
	case 't':
		if (toml_type(v) != TOML_TABLE ||
		    toml_table_count(v) != (size_t)e->i)
			fail_msg("%s: %s: want table of %lld, got %zu", name,
				 e->path, (long long)e->i, toml_table_count(v));
		break;
	default: fail_msg("%s: bad test kind %c", name, e->kind);
	}
}

static void
test_valid(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++) {
		const struct valid_case *c = &valid[i];
		struct toml_value *root = NULL;
		struct toml_error err;
		int rc = toml_parse(c->doc, strlen(c->doc), MAX_LEN, &root,
				    &err);

		if (rc != STATUS_OK)
			fail_msg("%s: parse failed at %d:%d: %s", c->name,
				 err.line, err.column, err.msg);
		for (size_t j = 0; j < 10 && c->ex[j].path; j++)
			check_expect(c->name, root, &c->ex[j]);
		toml_free(root);
	}
}

struct invalid_case {
	const char *name;
	const char *doc;
	size_t len; /* 0 = strlen(doc) */
	int line, col;
	const char *msg;
};

static const struct invalid_case invalid[] = {
	{"unterminated string", "a = \"abc\n", 0, 1, 9,
	 "newline in a "
	 "single-line string"},
	{"unterminated string at eof", "a = \"abc", 0, 1, 5,
	 "unterminated string"},
	{"unterminated multi-line", "a = \"\"\"abc\n\n", 0, 1, 5,
	 "unterminated string: missing closing \"\"\""},
	{"unterminated literal", "a = 'abc", 0, 1, 5, "unterminated string"},
	{"bad escape", "a = \"x\\qy\"", 0, 1, 7, "invalid escape sequence \\q"},
	{"short unicode escape", "a = \"\\u12\"", 0, 1, 6,
	 "\\u needs exactly 4 hex digits"},
	{"surrogate escape", "a = \"\\uD800\"", 0, 1, 6,
	 "not a unicode scalar value"},
	{"escape beyond unicode", "a = \"\\U00110000\"", 0, 1, 6,
	 "not a unicode scalar value"},
	{"backslash-space in single-line", "a = \"x\\ y\"", 0, 1, 7,
	 "invalid escape sequence"},
	{"control char in string", "a = \"x\x01y\"", 0, 1, 7,
	 "control character U+0001 must be escaped"},
	{"too many closing quotes", "a = \"\"\"x\"\"\"\"\"\"", 0, 1, 14,
	 "too many quotes"},
	{"multi-line key", "\"\"\"k\"\"\" = 1", 0, 1, 1,
	 "multi-line string cannot be a key"},
	{"duplicate key", "a = 1\nb = 2\na = 3", 0, 3, 1, "duplicate key a"},
	{"duplicate dotted key", "[t]\nx.y = 1\nx.y = 2", 0, 3, 3,
	 "duplicate key t.x.y"},
	{"duplicate in inline table", "a = {b = 1, b = 2}", 0, 1, 13,
	 "duplicate key b"},
	{"key over table", "a.b = 1\na = 2", 0, 2, 1, "duplicate key a"},
	{"table redefinition", "[a]\nx = 1\n[b]\n[a]", 0, 4, 1,
	 "table [a] is defined twice"},
	{"table over dotted keys", "[f]\napple.color = 1\n[f.apple]", 0, 3, 1,
	 "defined with dotted keys"},
	{"dotted keys into a [table]", "[a.b]\nx = 1\n[a]\nb.y = 2", 0, 4, 1,
	 "cannot add keys to table a.b with dotted keys"},
	{"table over a value", "a = 1\n[a]", 0, 2, 1,
	 "cannot define table [a]: a is already an integer"},
	{"extend inline table", "a = {x = 1}\n[a.b]", 0, 2, 2,
	 "a is an inline table"},
	{"dotted into inline table", "a = {x = 1}\na.y = 2", 0, 2, 1,
	 "defined inline"},
	{"array of tables over static array", "a = [1]\n[[a]]", 0, 2, 3,
	 "already a static array"},
	{"table over array of tables", "[[a]]\n[a]", 0, 2, 1,
	 "already an array of tables"},
	{"invalid utf-8", "a = \"\xff\"", 0, 1, 6, "invalid UTF-8 byte 0xFF"},
	{"dotted key through a value", "a = 1\na.b = 2", 0, 2, 1,
	 "key a is already an integer, not a table"},
	{"array of tables over a table", "[a]\n[[a]]", 0, 2, 3,
	 "cannot define [[a]]: a is already a table"},
	{"header through a value", "a = 1\n[a.b]", 0, 2, 2,
	 "cannot define [a.b]: a is not a table"},
	{"header through a static array", "a = [{}]\n[a.b]", 0, 2, 2,
	 "a is an array, not an array of tables"},
	{"backslash not ending the line", "a = \"\"\"x\\  y\"\"\"", 0, 1, 9,
	 "line-ending backslash must be followed only by whitespace"},
	{"number too long",
	 "a = 1111111111111111111111111111111111111111111111111111111111111111"
	 "11111111111111111111111111111111111111111111111111111111111111111111",
	 0, 1, 5, "longer than 128 characters"},
	{"word too long",
	 "a = xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	 "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	 0, 1, 5, "strings must be quoted"},
	{"truncated 4-byte utf-8", "a = '\xf0\x9f\x98'", 0, 1, 6,
	 "invalid UTF-8"},
	{"carriage return as a value", "a = \r\n", 0, 1, 5,
	 "expected a value, found a carriage return"},
	{"truncated utf-8", "# ok\nb = 'x\xc3", 0, 2, 7, "invalid UTF-8"},
	{"overlong utf-8", "a = '\xc0\xaf'", 0, 1, 6, "invalid UTF-8"},
	{"utf-8 surrogate", "a = '\xed\xa0\x80'", 0, 1, 6, "invalid UTF-8"},
	{"column counts characters", "a = '\xc3\xa9\xc3\xa9' x", 0, 1, 10,
	 "expected a newline or a comment after the value, found 'x'"},
	{"integer overflow", "a = 9223372036854775808", 0, 1, 5,
	 "out of range"},
	{"negative overflow", "a = -9223372036854775809", 0, 1, 5,
	 "out of range"},
	{"hex overflow", "a = 0x8000000000000000", 0, 1, 5, "out of range"},
	{"leading zeros", "a = 0123", 0, 1, 5, "leading zeros"},
	{"leading zeros negative", "a = -01", 0, 1, 5, "leading zeros"},
	{"float leading zeros", "a = 03.14", 0, 1, 5, "leading zeros"},
	{"double underscore", "a = 1__0", 0, 1, 5, "'_' only between digits"},
	{"trailing underscore", "a = 10_", 0, 1, 5, "invalid integer"},
	{"signed hex", "a = -0x10", 0, 1, 5, "cannot have a sign"},
	{"bad hex digit", "a = 0xZZ", 0, 1, 5, "expected hex digits"},
	{"bad binary digit", "a = 0b102", 0, 1, 5, "binary"},
	{"float without fraction digits", "a = 1.", 0, 1, 5, "invalid float"},
	{"float without integer part", "a = .5", 0, 1, 5, "invalid float"},
	{"float dot before exponent", "a = 1.e5", 0, 1, 5, "invalid float"},
	{"float empty exponent", "a = 1e", 0, 1, 5, "invalid float"},
	{"float double dot", "a = 1.2.3", 0, 1, 5, "invalid float"},
	{"float overflow", "a = 1e400", 0, 1, 5, "out of range"},
	{"bare word value", "a = hello", 0, 1, 5, "strings must be quoted"},
	{"bad boolean", "a = True", 0, 1, 5, "strings must be quoted"},
	{"date", "d = 1979-05-27", 0, 1, 5,
	 "dates and times are not supported"},
	{"time", "t = 07:32:00", 0, 1, 5, "dates and times are not supported"},
	{"missing value", "a =\n", 0, 1, 4,
	 "expected a value, found a newline"},
	{"missing equals", "a 1", 0, 1, 3, "expected '=' after key"},
	{"two values on a line", "a = 1 b = 2", 0, 1, 7,
	 "expected a newline or a comment"},
	{"unclosed array", "a = [1, 2\n", 0, 2, 1, "unclosed array"},
	{"array missing comma", "a = [1 2]", 0, 1, 8,
	 "expected ',' or ']' in array"},
	{"array lone comma", "a = [,]", 0, 1, 6, "expected a value, found ','"},
	{"inline table trailing comma", "a = {b = 1,}", 0, 1, 12,
	 "trailing comma"},
	{"inline table newline", "a = {b = 1\n}", 0, 1, 11,
	 "inline tables cannot span lines"},
	{"unclosed header", "[a\nb = 1", 0, 1, 3, "expected ']'"},
	{"unclosed array-of-tables header", "[[a]\n", 0, 1, 4, "expected ']]'"},
	{"empty header", "[]", 0, 1, 2, "expected a key, found ']'"},
	{"text after header", "[a] x", 0, 1, 5, "after the table header"},
	{"bare carriage return", "a = 1\rb = 2", 0, 1, 6,
	 "carriage return without a newline"},
	{"control char in comment", "# bell \x07\na = 1", 0, 1, 8,
	 "not allowed in a comment"},
	{"nul byte", "a = 1\n\0", 7, 2, 1, "expected a key, found U+0000"},
	{"nul in key", "\"a\\u0000\" = 1", 0, 1, 1,
	 "keys must not contain U+0000"},
	{"tab before eof in string", "a = 'x\ty", 0, 1, 5,
	 "unterminated string"},
};

static void
test_invalid(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(invalid) / sizeof(invalid[0]); i++) {
		const struct invalid_case *c = &invalid[i];
		struct toml_value *root = (struct toml_value *)&root;
		struct toml_error err;
		size_t len = c->len ? c->len : strlen(c->doc);
		int rc = toml_parse(c->doc, len, MAX_LEN, &root, &err);

		if (rc != STATUS_INVALID)
			fail_msg("%s: want STATUS_INVALID, got %d", c->name,
				 rc);
		assert_null(root);
		if (err.line != c->line || err.column != c->col ||
		    !strstr(err.msg, c->msg)) {
			print_error("%s: want %d:%d \"%s\", got %d:%d \"%s\"\n",
				    c->name, c->line, c->col, c->msg, err.line,
				    err.column, err.msg);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

/* Nesting is bounded at TOML_MAX_DEPTH by every route into it. */
static void
test_depth(void **state)
{
	char doc[4096];
	struct toml_value *root;
	struct toml_error err;
	size_t n;
	int d;

	(void)state;
	/* arrays: the value of a top-level key sits at depth 1 */
	for (d = TOML_MAX_DEPTH; d <= TOML_MAX_DEPTH + 1; d++) {
		n = (size_t)snprintf(doc, sizeof(doc), "a = ");
		for (int i = 0; i < d; i++)
			doc[n++] = '[';
		for (int i = 0; i < d; i++)
			doc[n++] = ']';
		doc[n] = '\0';
		assert_int_equal(toml_parse(doc, n, MAX_LEN, &root, &err),
				 d <= TOML_MAX_DEPTH ? STATUS_OK
						     : STATUS_INVALID);
		if (d > TOML_MAX_DEPTH)
			assert_non_null(strstr(err.msg, "nesting deeper"));
		toml_free(root);
	}
	/* inline tables */
	n = (size_t)snprintf(doc, sizeof(doc), "a = ");
	for (int i = 0; i < TOML_MAX_DEPTH + 1; i++)
		n += (size_t)snprintf(doc + n, sizeof(doc) - n, "{b = ");
	n += (size_t)snprintf(doc + n, sizeof(doc) - n, "1");
	for (int i = 0; i < TOML_MAX_DEPTH + 1; i++)
		doc[n++] = '}';
	doc[n] = '\0';
	assert_int_equal(toml_parse(doc, n, MAX_LEN, &root, &err),
			 STATUS_INVALID);
	assert_non_null(strstr(err.msg, "nesting deeper"));
	/* a table header nested through dotted keys */
	n = (size_t)snprintf(doc, sizeof(doc), "[a");
	for (int i = 0; i < TOML_MAX_DEPTH - 1; i++)
		n += (size_t)snprintf(doc + n, sizeof(doc) - n, ".a");
	n += (size_t)snprintf(doc + n, sizeof(doc) - n, "]\nb.c = 1");
	assert_int_equal(toml_parse(doc, n, MAX_LEN, &root, &err),
			 STATUS_INVALID);
	assert_int_equal(err.line, 2);
	assert_int_equal(err.column, 1);
	assert_non_null(strstr(err.msg, "nesting deeper"));
	/* a key of too many parts */
	n = 0;
	for (int i = 0; i < TOML_MAX_DEPTH + 1; i++)
		n += (size_t)snprintf(doc + n, sizeof(doc) - n, "k.");
	n += (size_t)snprintf(doc + n, sizeof(doc) - n, "z = 1");
	assert_int_equal(toml_parse(doc, n, MAX_LEN, &root, &err),
			 STATUS_INVALID);
	assert_non_null(strstr(err.msg, "nesting too deep"));
}

static void
test_limit_and_null(void **state)
{
	struct toml_value *root = (struct toml_value *)&root;
	struct toml_error err;

	(void)state;
	assert_int_equal(toml_parse("a = 1", 5, 4, &root, &err), STATUS_LIMIT);
	assert_null(root);
	assert_non_null(strstr(err.msg, "over the limit of 4 bytes"));
	assert_int_equal(toml_parse("a = 1", 5, 5, &root, NULL), STATUS_OK);
	toml_free(root);
	/* no err: failure still reported by status */
	assert_int_equal(toml_parse("a = ", 4, 5, &root, NULL), STATUS_INVALID);
	assert_null(root);
	assert_int_equal(toml_parse(NULL, 0, 5, &root, &err), STATUS_OK);
	assert_int_equal(toml_table_count(root), 0);
	toml_free(root);
	toml_free(NULL);
}

/* Order, positions, accessors on wrong types, NUL inside strings. */
static void
test_accessors(void **state)
{
	static const char doc[] = "z = 1\n"
				  "a = 'two'\n"
				  "[m]\n"
				  "  k =   \"\\u0000x\"\n"
				  "[[t]]\n";
	struct toml_value *root;
	const struct toml_value *v;
	struct toml_error err;
	int line, col;

	(void)state;
	assert_int_equal(toml_parse(doc, strlen(doc), MAX_LEN, &root, &err),
			 STATUS_OK);
	assert_int_equal(toml_table_count(root), 4);
	assert_string_equal(toml_table_key_at(root, 0), "z");
	assert_string_equal(toml_table_key_at(root, 1), "a");
	assert_string_equal(toml_table_key_at(root, 2), "m");
	assert_string_equal(toml_table_key_at(root, 3), "t");
	assert_null(toml_table_key_at(root, 4));
	assert_null(toml_table_value_at(root, 4));
	assert_true(toml_array_is_tables(toml_table_get(root, "t")));
	assert_false(toml_array_is_tables(toml_table_get(root, "a")));

	v = get_path(root, "m/k");
	assert_int_equal(toml_line(v), 4);
	assert_int_equal(toml_column(v), 9);
	assert_int_equal(toml_string_len(v), 2);
	assert_memory_equal(toml_string(v), "\0x", 3);
	toml_table_key_pos(toml_table_get(root, "m"), 0, &line, &col);
	assert_int_equal(line, 4);
	assert_int_equal(col, 3);
	v = toml_table_get(root, "m");
	assert_int_equal(toml_line(v), 3);
	assert_int_equal(toml_column(v), 2);

	/* wrong-type accessors return zero values, never crash */
	v = toml_table_get(root, "z");
	assert_null(toml_string(v));
	assert_int_equal(toml_string_len(v), 0);
	assert_int_equal(toml_table_count(v), 0);
	assert_null(toml_table_get(v, "x"));
	assert_int_equal(toml_array_count(v), 0);
	assert_null(toml_array_at(v, 0));
	assert_false(toml_bool(v));
	assert_true(toml_float(v) == 0.0);
	assert_int_equal(toml_int(toml_table_get(root, "a")), 0);
	assert_string_equal(toml_type_name(TOML_BOOL), "boolean");
	assert_string_equal(toml_type_name(TOML_INT), "integer");
	toml_free(root);
}

/* Many keys in one table go through the hash index: all still found,
 * duplicates still caught, order kept. */
static void
test_large_table(void **state)
{
	enum {
		N = 3000
	};
	size_t cap = N * 24, n = 0;
	char *doc = malloc(cap), key[32];
	struct toml_value *root;
	struct toml_error err;

	(void)state;
	assert_non_null(doc);
	for (int i = 0; i < N; i++)
		n += (size_t)snprintf(doc + n, cap - n, "k%d = %d\n", i, i);
	assert_int_equal(toml_parse(doc, n, MAX_LEN, &root, &err), STATUS_OK);
	assert_int_equal(toml_table_count(root), N);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		assert_int_equal(toml_int(toml_table_get(root, key)), i);
		assert_string_equal(toml_table_key_at(root, (size_t)i), key);
	}
	assert_null(toml_table_get(root, "k3000"));
	toml_free(root);
	n += (size_t)snprintf(doc + n, cap - n, "k1234 = 0\n");
	assert_int_equal(toml_parse(doc, n, MAX_LEN, &root, &err),
			 STATUS_INVALID);
	assert_int_equal(err.line, N + 1);
	assert_non_null(strstr(err.msg, "duplicate key k1234"));
	free(doc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_limit_and_null),
		cmocka_unit_test(test_accessors),
		cmocka_unit_test(test_large_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
