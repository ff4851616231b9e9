/*
 * test_jsondump.c - unit tests for lib/json/jsondump: the text it writes for
 * every type (checked against literal expected text and against
 * json_dumps, which it must match byte for byte but for reals, which must
 * read back as the same double in no more characters), what it refuses
 * (bad UTF-8, loops, a bare scalar without JSON_ENCODE_ANY), the flags and
 * depths it leaves to json_dumps, and the writer.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jsondump.h"

#define COMPACT_ANY (JSON_COMPACT | JSON_ENCODE_ANY)

/* jsondump(v, flags) is want (NULL: fails), and so is json_dumps. */
static void
assert_dump(const json_t *v, size_t flags, const char *want)
{
	char *got = jsondump(v, flags), *ref = json_dumps(v, flags);

	if (want == NULL) {
		if (got != NULL)
			fail_msg("jsondump gave %s, want NULL", got);
		assert_null(ref);
		return;
	}
	if (got == NULL)
		fail_msg("jsondump gave NULL, want %s", want);
	assert_string_equal(got, want);
	assert_non_null(ref);
	assert_string_equal(ref, want);
	free(got);
	free(ref);
}

/* jsondump(v, flags) is want; json_dumps is not asked (reals). */
static void
assert_dump_text(const json_t *v, const char *want)
{
	char *got = jsondump(v, JSON_COMPACT);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

/* jsondump(v, flags) is what json_dumps gives, whatever that is. */
static void
assert_same(const json_t *v, size_t flags)
{
	char *got = jsondump(v, flags), *ref = json_dumps(v, flags);

	if (ref == NULL)
		assert_null(got);
	else {
		assert_non_null(got);
		assert_string_equal(got, ref);
	}
	free(got);
	free(ref);
}

/* jsondump(v, flags) reads back as v (reals: the same doubles), in no
 * more characters than json_dumps(v, flags). */
static void
assert_reads_back(const json_t *v, size_t flags)
{
	char *got = jsondump(v, flags), *ref = json_dumps(v, flags);
	json_error_t err;
	json_t *back;

	assert_non_null(got);
	assert_non_null(ref);
	back = json_loads(got, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (back == NULL)
		fail_msg("%s does not parse: %s", got, err.text);
	assert_true(json_equal(back, v));
	assert_true(strlen(got) <= strlen(ref));
	json_decref(back);
	free(got);
	free(ref);
}

/* A real: jsondump gives want, which strtod reads back as v. */
static void
check_real(double v, const char *want)
{
	json_t *r = json_real(v);
	char *got = jsondump(r, COMPACT_ANY);

	assert_non_null(got);
	assert_string_equal(got, want);
	assert_true(strtod(want, NULL) == v);
	assert_reads_back(r, COMPACT_ANY);
	free(got);
	json_decref(r);
}

/* Takes the reference to v. */
static void
check(json_t *v, const char *want)
{
	assert_non_null(v);
	assert_dump(v, COMPACT_ANY, want);
	json_decref(v);
}

static void
test_scalars(void **state)
{
	(void)state;
	check(json_null(), "null");
	check(json_true(), "true");
	check(json_false(), "false");
	check(json_integer(0), "0");
	check(json_integer(7), "7");
	check(json_integer(-1), "-1");
	check(json_integer(1234567890123), "1234567890123");
	check(json_integer(LLONG_MAX), "9223372036854775807");
	check(json_integer(LLONG_MIN), "-9223372036854775808");
}

static void
test_reals(void **state)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{0.0, "0.0"},
		{-0.0, "-0.0"},
		{1.0, "1.0"},
		{-123.0, "-123.0"},
		{0.5, "0.5"},
		{-2.5, "-2.5"},
		/* json_dumps: "%.17g", 0.10000000000000001 and the like */
		{0.1, "0.1"},
		{12.345, "12.345"},
		{0.30000000000000004, "0.30000000000000004"},
		{1e300, "1e300"},
		{-1e300, "-1e300"},
		{1e-7, "1e-7"},
		{1.5e-5, "1.5e-5"},
		{0.0001, "0.0001"},
		{0.00009, "9e-5"},
		{1e16, "10000000000000000.0"},
		{99999999999999984.0, "99999999999999984.0"},
		{-99999999999999984.0, "-99999999999999984.0"},
		{1e17, "1e17"},
		{123456789012345678.0, "1.2345678901234568e17"},
		{1e22, "1e22"},
		{9007199254740993.0, "9007199254740992.0"},
		{1.7976931348623157e308, "1.7976931348623157e308"},
		{2.0 / 3.0, "0.6666666666666666"},
		/* span durations: nanoseconds / 1e6 */
		{45497626 / 1e6, "45.497626"},
		{593549 / 1e6, "0.593549"},
		{-120 / 1e6, "-0.00012"},
		{100 / 1e6, "0.0001"},
		{1234500000 / 1e6, "1234.5"},
		{999999999999999 / 1e6, "999999999.999999"},
		{1000000000000001 / 1e6, "1000000000.000001"},
		{1 / 1e6, "1e-6"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_real(cases[i].v, cases[i].want);
	/* the fewest of 15, 16 and 17 digits, not always the fewest of all:
	 * the smallest denormal is 5e-324 */
	check_real(5e-324, "4.94065645841247e-324");
	/* reals anywhere in a value */
	{
		json_t *v = json_pack("{s:[f,f,f],s:{s:f}}", "a", 0.1, 1e-9,
				      -45.497626, "b", "c", 1.0 / 3.0);

		assert_reads_back(v, JSON_COMPACT);
		assert_dump_text(v, "{\"a\":[0.1,1e-9,-45.497626],"
				    "\"b\":{\"c\":0.3333333333333333}}");
		json_decref(v);
	}
}

static void
test_strings(void **state)
{
	(void)state;
	check(json_string(""), "\"\"");
	check(json_string("plain text"), "\"plain text\"");
	check(json_string("q\"b\\s/"), "\"q\\\"b\\\\s/\"");
	check(json_string("\b\f\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
	check(json_string("a\x01z\x1f\x7f"), "\"a\\u0001z\\u001F\x7f\"");
	check(json_stringn("a\0b", 3), "\"a\\u0000b\"");
	/* Non-ASCII UTF-8 is written as is, 2, 3 and 4 bytes. */
	check(json_string("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
	      "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	check(json_string("\xf4\x8f\xbf\xbf\xed\x9f\xbf"),
	      "\"\xf4\x8f\xbf\xbf\xed\x9f\xbf\"");
	check(json_string("end escape\n"), "\"end escape\\n\"");
}

/*
 * Long strings are scanned 8 bytes at a time: every byte value at every
 * position of a 24-byte string (three words, and the tail after a special
 * byte) is written as json_dumps writes it, or fails with it.
 */
static void
test_string_every_byte_everywhere(void **state)
{
	(void)state;
	for (int b = 0; b < 256; b++)
		for (size_t pos = 0; pos < 24; pos++) {
			char s[25] = "abcdefghijklmnopqrstuvwx";
			json_t *a;

			s[pos] = (char)b;
			a = json_pack("[o]", json_stringn_nocheck(s, 24));
			assert_non_null(a);
			assert_same(a, JSON_COMPACT);
			json_decref(a);
		}
	/* two-byte characters across word boundaries */
	for (size_t pos = 0; pos < 23; pos++) {
		char s[25] = "abcdefghijklmnopqrstuvwx";
		json_t *a;

		s[pos] = (char)0xc3;
		s[pos + 1] = (char)0xa9;
		a = json_pack("[o]", json_stringn_nocheck(s, 24));
		assert_same(a, JSON_COMPACT);
		json_decref(a);
	}
}

/* A string value that is not UTF-8 fails the whole dump. */
static void
test_bad_utf8(void **state)
{
	static const char *const bad[] = {
		"\xff",
		"\x80",
		"a\xc0\x80",
		"\xc1\xbf",
		"\xe0\x80\x80",
		"\xed\xa0\x80",
		"\xf0\x80\x80\x80",
		"\xf4\x90\x80\x80",
		"\xf5\x80\x80\x80",
		"ok\n\xe2\x82",
		"\xe2\x82z",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
		json_t *a = json_pack("[i,o]", 1, s);

		check(json_incref(s), NULL);
		check(a, NULL);
	}
}

/*
 * An object key that is not UTF-8 does not fail json_dumps: it writes the
 * opening quote and what it had flushed (up to the last escape), then goes
 * on with the ':'.  Garbled, but that is what must be matched.
 */
static void
test_bad_utf8_key(void **state)
{
	json_t *o = json_object();

	(void)state;
	assert_int_equal(
		json_object_setn_new_nocheck(o, "a\xff", 2, json_integer(1)),
		0);
	assert_int_equal(
		json_object_setn_new_nocheck(o, "x\ny\xffz", 5, json_true()),
		0);
	assert_int_equal(json_object_set_new(o, "k", json_null()), 0);
	check(o, "{\":1,\"x\\n:true,\"k\":null}");
}

static void
test_containers(void **state)
{
	json_t *inner = json_pack("{s:i}", "x", 1);

	(void)state;
	check(json_array(), "[]");
	check(json_object(), "{}");
	check(json_pack("[[],{},[[]],{s:{}}]", "e"), "[[],{},[[]],{\"e\":{}}]");
	check(json_pack("[i,s,b,n,f]", 1, "two", 1, 4.5),
	      "[1,\"two\",true,null,4.5]");
	/* Insertion order, not sorted, escaped keys. */
	check(json_pack("{s:i,s:i,s:i,s:i}", "b", 1, "a", 2, "c\"", 3, "", 4),
	      "{\"b\":1,\"a\":2,\"c\\\"\":3,\"\":4}");
	/* Key with a NUL inside (json_object_setn). */
	{
		json_t *o = json_object();

		json_object_setn_new(o, "a\0b", 3, json_integer(5));
		check(o, "{\"a\\u0000b\":5}");
	}
	/* The same container twice is not a loop. */
	check(json_pack("[O,O,{s:O}]", inner, inner, "k", inner),
	      "[{\"x\":1},{\"x\":1},{\"k\":{\"x\":1}}]");
	json_decref(inner);
}

static void
test_message(void **state)
{
	json_t *msg = json_pack(
		"{s:s,s:i,s:{s:[{s:s,s:s,s:{s:s,s:{s:{s:s}}}}],s:b}}",
		"jsonrpc", "2.0", "id", 1, "result", "tools", "name",
		"query_traces", "description", "Find traces.\nSlow ones first.",
		"inputSchema", "type", "object", "properties", "service",
		"type", "string", "truncated", 0);

	(void)state;
	check(msg, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[{"
		   "\"name\":\"query_traces\",\"description\":\"Find traces."
		   "\\nSlow ones first.\",\"inputSchema\":{\"type\":"
		   "\"object\",\"properties\":{\"service\":{\"type\":"
		   "\"string\"}}}}],\"truncated\":false}}");
}

static void
test_loops(void **state)
{
	json_t *a = json_array(), *c = json_array();
	json_t *o = json_object(), *b = json_array();

	(void)state;
	/* jansson refuses a container directly inside itself, so: an array
	 * one level inside itself, an object two levels inside itself. */
	assert_int_equal(json_array_append(a, a), -1);
	assert_int_equal(json_array_append(a, c), 0);
	assert_int_equal(json_array_append(c, a), 0);
	assert_dump(a, JSON_COMPACT, NULL);
	assert_dump(c, JSON_COMPACT, NULL);
	assert_int_equal(json_object_set_new(o, "b", b), 0);
	assert_int_equal(json_array_append(b, o), 0);
	assert_dump(o, JSON_COMPACT, NULL);
	assert_dump(b, COMPACT_ANY, NULL);
	/* Break the cycles so they can be freed. */
	json_array_clear(c);
	json_array_clear(b);
	assert_dump(a, JSON_COMPACT, "[[]]");
	assert_dump(o, JSON_COMPACT, "{\"b\":[]}");
	json_decref(a);
	json_decref(c);
	json_decref(o);
}

/* A value of depth n: n nested arrays around 1 (n >= 1). */
static json_t *
nested(int n, json_t **innermost)
{
	json_t *root = json_array(), *c = root;

	for (int i = 1; i < n; i++) {
		json_t *next = json_array();

		json_array_append_new(c, next);
		c = next;
	}
	json_array_append_new(c, json_integer(1));
	if (innermost != NULL)
		*innermost = c;
	return root;
}

/* Past JSONDUMP_MAX_DEPTH json_dumps answers (it has no limit). */
static void
test_depth(void **state)
{
	static const int depths[] = {1, JSONDUMP_MAX_DEPTH - 1,
				     JSONDUMP_MAX_DEPTH, JSONDUMP_MAX_DEPTH + 1,
				     3000};

	(void)state;
	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		json_t *v = nested(depths[i], NULL);
		char *s = jsondump(v, JSON_COMPACT);

		assert_non_null(s);
		assert_int_equal(strlen(s), 2 * (size_t)depths[i] + 1);
		assert_same(v, JSON_COMPACT);
		free(s);
		json_decref(v);
	}
	/* A loop found only past the depth: still refused. */
	{
		json_t *inner, *v = nested(JSONDUMP_MAX_DEPTH + 10, &inner);

		json_array_append(inner, v);
		assert_dump(v, JSON_COMPACT, NULL);
		json_array_clear(inner);
		json_decref(v);
	}
}

static void
test_top_level(void **state)
{
	json_t *i = json_integer(3), *s = json_string("x");

	(void)state;
	/* A bare scalar needs JSON_ENCODE_ANY. */
	assert_dump(i, JSON_COMPACT, NULL);
	assert_dump(s, JSON_COMPACT, NULL);
	assert_dump(i, COMPACT_ANY, "3");
	assert_dump(s, COMPACT_ANY, "\"x\"");
	assert_null(jsondump(NULL, JSON_COMPACT));
	assert_null(jsondump(NULL, COMPACT_ANY));
	json_decref(i);
	json_decref(s);
}

/* Any other flags: json_dumps' own answer. */
static void
test_other_flags(void **state)
{
	json_t *v = json_pack("{s:i,s:[f,s],s:{}}", "z", 1, "a", 0.25,
			      "/\xc3\xa9", "e");
	static const size_t flags[] = {
		0,
		JSON_ENCODE_ANY,
		JSON_COMPACT | JSON_SORT_KEYS,
		JSON_COMPACT | JSON_ENSURE_ASCII,
		JSON_COMPACT | JSON_ESCAPE_SLASH,
		JSON_COMPACT | JSON_REAL_PRECISION(3),
		JSON_INDENT(2),
		JSON_COMPACT | JSON_EMBED,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		assert_same(v, flags[i]);
	assert_dump(v, JSON_COMPACT | JSON_SORT_KEYS,
		    "{\"a\":[0.25,\"/\xc3\xa9\"],\"e\":{},\"z\":1}");
	json_decref(v);
}

/* A large answer, grown through many reallocations. */
static void
test_large(void **state)
{
	json_t *rows = json_array();
	char name[64];

	(void)state;
	for (int i = 0; i < 3000; i++) {
		snprintf(name, sizeof(name), "span \"%d\"\t\xc3\xa9", i);
		json_array_append_new(
			rows, json_pack("{s:s,s:I,s:f,s:b,s:n}", "name", name,
					"start", (json_int_t)i * 1000003, "ms",
					i / 7.0, "error", i % 2, "parent"));
	}
	assert_reads_back(rows, JSON_COMPACT);
	assert_reads_back(rows, COMPACT_ANY);
	json_decref(rows);
}

/* The writer: the values as jsondump writes them, appended; a failure
 * leaves the bytes as they were and stays in the buffer. */
static void
test_writer(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 20);
	assert_int_equal(buf_puts(&b, "["), STATUS_OK);
	assert_int_equal(jsondump_string(&b, "a\"b\n\xc3\xa9", 6), STATUS_OK);
	assert_int_equal(buf_puts(&b, ","), STATUS_OK);
	assert_int_equal(jsondump_integer(&b, -42), STATUS_OK);
	assert_int_equal(buf_puts(&b, ","), STATUS_OK);
	assert_int_equal(jsondump_real(&b, 45497626 / 1e6), STATUS_OK);
	assert_int_equal(buf_puts(&b, ","), STATUS_OK);
	assert_int_equal(jsondump_real(&b, 2.0), STATUS_OK);
	assert_string_equal(b.data, "[\"a\\\"b\\n\xc3\xa9\",-42,45.497626,2.0");
	/* NUL-terminated after each value, as buf promises */
	assert_int_equal(strlen(b.data), b.len);
	/* each refusal on its own (rolled back), then kept like an append's */
	assert_int_equal(jsondump_string(&b, "ok\xff", 3), STATUS_INVALID);
	assert_int_equal(buf_error(&b), STATUS_INVALID);
	buf_rollback(&b, b.len);
	assert_int_equal(jsondump_string(&b, NULL, 0), STATUS_INVALID);
	buf_rollback(&b, b.len);
	assert_int_equal(jsondump_real(&b, NAN), STATUS_INVALID);
	buf_rollback(&b, b.len);
	assert_int_equal(jsondump_real(&b, -INFINITY), STATUS_INVALID);
	assert_string_equal(b.data, "[\"a\\\"b\\n\xc3\xa9\",-42,45.497626,2.0");
	/* later writes do nothing and answer the first failure */
	assert_int_equal(jsondump_integer(&b, 1), STATUS_INVALID);
	assert_int_equal(jsondump_string(&b, "ok", 2), STATUS_INVALID);
	assert_string_equal(b.data, "[\"a\\\"b\\n\xc3\xa9\",-42,45.497626,2.0");
	buf_free(&b);

	/* no room: STATUS_NOMEM, and the bytes unchanged */
	buf_init(&b, 8);
	assert_int_equal(buf_puts(&b, "[1,"), STATUS_OK);
	assert_int_equal(jsondump_string(&b, "too long", 8), STATUS_NOMEM);
	assert_int_equal(buf_error(&b), STATUS_NOMEM);
	assert_int_equal(jsondump_real(&b, 0.3), STATUS_NOMEM);
	assert_int_equal(buf_puts(&b, "2"), STATUS_NOMEM);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.data, "[1,");
	buf_rollback(&b, b.len);
	assert_int_equal(jsondump_real(&b, 0.30000000000000004), STATUS_NOMEM);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.data, "[1,");
	buf_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_reals),
		cmocka_unit_test(test_writer),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_string_every_byte_everywhere),
		cmocka_unit_test(test_bad_utf8),
		cmocka_unit_test(test_bad_utf8_key),
		cmocka_unit_test(test_containers),
		cmocka_unit_test(test_message),
		cmocka_unit_test(test_loops),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_top_level),
		cmocka_unit_test(test_other_flags),
		cmocka_unit_test(test_large),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
