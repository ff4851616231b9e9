/*
 * test_jsonschema.c - lib/json/jsonschema: instances checked against schemas
 * (verdict and message), schemas refused at compile, defaults, limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "json/jsonschema.h"

static json_t *
load(const char *text)
{
	json_error_t je;
	json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);

	if (j == NULL)
		fail_msg("bad test JSON %s: %s", text, je.text);
	return j;
}

static struct jsonschema *
compile_ok(const char *text)
{
	json_t *j = load(text);
	struct jsonschema *s = NULL;
	char err[256];
	int rc = jsonschema_compile(j, &s, err, sizeof(err));

	if (rc != STATUS_OK)
		fail_msg("schema %s: rc %d: %s", text, rc, err);
	json_decref(j);
	return s;
}

#define CONFORMANCE                                                            \
	"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","       \
	"\"type\":\"object\",\"$defs\":{\"address\":{\"type\":\"object\","     \
	"\"properties\":{\"street\":{\"type\":\"string\"},\"city\":{"          \
	"\"type\":\"string\"}}}},\"properties\":{\"name\":{\"type\":"          \
	"\"string\"},\"address\":{\"$ref\":\"#/$defs/address\"}},"             \
	"\"additionalProperties\":false}"

/* The inputSchema conformance 0.2.0-alpha.12 lists for
 * json_schema_2020_12_tool (SEP-2106 keywords). */
#define CONFORMANCE_2026                                                       \
	"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","       \
	"\"type\":\"object\",\"$defs\":{\"address\":{\"$anchor\":"             \
	"\"addressDef\",\"type\":\"object\",\"properties\":{\"street\":{"      \
	"\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"              \
	"\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{"         \
	"\"$ref\":\"#/$defs/address\"},\"contactMethod\":{\"type\":"           \
	"\"string\",\"enum\":[\"phone\",\"email\"]},\"phone\":{\"type\":"      \
	"\"string\"},\"email\":{\"type\":\"string\"}},\"allOf\":[{\"anyOf\":"  \
	"[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]}],"           \
	"\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}},"    \
	"\"required\":[\"contactMethod\"]},\"then\":{\"required\":"            \
	"[\"phone\"]},\"else\":{\"required\":[\"email\"]},"                    \
	"\"additionalProperties\":false}"

/* if/then/else on a number: one condition, both branches. */
#define COND                                                                   \
	"{\"if\":{\"minimum\":10},\"then\":{\"multipleOf\":10},"               \
	"\"else\":{\"maximum\":5}}"

#define TOOL                                                                   \
	"{\"type\":\"object\",\"properties\":{\"service\":{\"type\":"          \
	"\"string\"},\"time_range\":{\"enum\":[\"15m\",\"1h\",\"24h\"]},"      \
	"\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000},"     \
	"\"filters\":{\"type\":\"object\",\"properties\":{\"status\":{"        \
	"\"type\":\"string\"}},\"required\":[\"status\"]}},"                   \
	"\"required\":[\"service\"],\"additionalProperties\":false}"

/* err NULL: the instance is valid; else a substring of verr.msg. */
struct vcase {
	const char *schema;
	const char *inst;
	const char *err;
};

static const struct vcase vcases[] = {
	/* type */
	{"{\"type\":\"string\"}", "\"x\"", NULL},
	{"{\"type\":\"string\"}", "42", "expected a string, got 42"},
	{"{\"type\":\"integer\"}", "1.0", NULL},
	{"{\"type\":\"integer\"}", "3", NULL},
	{"{\"type\":\"integer\"}", "1.5", "expected an integer, got 1.5"},
	{"{\"type\":\"number\"}", "7", NULL},
	{"{\"type\":\"number\"}", "\"7\"", "expected a number, got \"7\""},
	{"{\"type\":\"null\"}", "null", NULL},
	{"{\"type\":\"boolean\"}", "0", "expected a boolean, got 0"},
	{"{\"type\":\"array\"}", "{}", "expected an array, got {}"},
	{"{\"type\":\"object\"}", "[]", "expected an object, got []"},
	{"{\"type\":[\"string\",\"null\"]}", "null", NULL},
	{"{\"type\":[\"string\",\"null\"]}", "1",
	 "expected null or a string, got 1"},
	{"true", "{\"a\":1}", NULL},
	{"false", "1", "expected no value here"},
	{"{}", "[1,2]", NULL},
	/* const and enum (numbers by value) */
	{"{\"const\":1}", "1.0", NULL},
	{"{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,2.0]}", NULL},
	{"{\"const\":\"x\"}", "\"y\"", "expected \"x\", got \"y\""},
	{"{\"enum\":[\"15m\",\"1h\",\"24h\"]}", "\"1h\"", NULL},
	{"{\"enum\":[\"15m\",\"1h\",\"24h\"]}", "\"2x\"",
	 "expected one of \"15m\", \"1h\", \"24h\", got \"2x\""},
	{"{\"enum\":[1,null]}", "1.0", NULL},
	{"{\"enum\":[1,null]}", "false", "expected one of 1, null, got false"},
	/* numbers */
	{"{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000}", "1000", NULL},
	{"{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000}", "0",
	 "expected an integer >= 1 and <= 1000, got 0"},
	{"{\"maximum\":1.5}", "1.6", "expected a number <= 1.5, got 1.6"},
	{"{\"exclusiveMinimum\":0}", "0", "expected a number > 0, got 0"},
	{"{\"exclusiveMinimum\":0}", "0.001", NULL},
	{"{\"exclusiveMaximum\":10}", "10", "expected a number < 10"},
	{"{\"exclusiveMaximum\":10}", "9.99", NULL},
	{"{\"minimum\":5}", "\"a\"", NULL},
	{"{\"multipleOf\":5}", "15", NULL},
	{"{\"multipleOf\":5}", "7",
	 "expected a number that is a multiple of 5, got 7"},
	{"{\"minimum\":1,\"multipleOf\":5}", "7",
	 "expected a number >= 1 and a multiple of 5, got 7"},
	{"{\"multipleOf\":0.1}", "0.3", NULL},
	{"{\"multipleOf\":0.5}", "0.7", "multiple of 0.5"},
	/* strings */
	{"{\"minLength\":2,\"maxLength\":3}", "\"\xc3\xa9\xc3\xa9\xc3\xa9\"",
	 NULL},
	{"{\"maxLength\":3}", "\"abcd\"",
	 "expected a string of at most 3 characters, got \"abcd\""},
	{"{\"minLength\":2}", "\"a\"", "at least 2 characters"},
	{"{\"minLength\":2,\"maxLength\":4}", "\"a\"", "of 2 to 4 characters"},
	{"{\"maxLength\":1}", "5", NULL},
	{"{\"pattern\":\"^[a-z]+$\"}", "\"abc\"", NULL},
	{"{\"pattern\":\"^[a-z]+$\"}", "\"ab1\"",
	 "expected a string matching the pattern \"^[a-z]+$\", got \"ab1\""},
	{"{\"pattern\":\"b\"}", "\"abc\"", NULL},
	{"{\"pattern\":\"^\\\\d{4}-\\\\d{2}$\"}", "\"2024-05\"", NULL},
	{"{\"pattern\":\"^\\\\d+$\"}", "\"12a\"", "pattern"},
	{"{\"pattern\":\"^\\\\w+$\"}", "\"a_Z9\"", NULL},
	{"{\"pattern\":\"^\\\\w+$\"}", "\"a-b\"", "pattern"},
	{"{\"pattern\":\"^\\\\S+\\\\s\\\\S+$\"}", "\"a b\"", NULL},
	{"{\"pattern\":\"^\\\\D\\\\W$\"}", "\"a-\"", NULL},
	{"{\"pattern\":\"^\\\\D$\"}", "\"1\"", "pattern"},
	{"{\"pattern\":\"^[\\\\d.-]+$\"}", "\"1.2-3\"", NULL},
	{"{\"pattern\":\"^[\\\\]\\\\[^-]+$\"}", "\"]^[-\"", NULL},
	{"{\"pattern\":\"^[^\\\\]]+$\"}", "\"]\"", "pattern"},
	{"{\"pattern\":\"^(?:ab)+?$\"}", "\"abab\"", NULL},
	{"{\"pattern\":\"^a\\\\.b\\\\/c$\"}", "\"a.b/c\"", NULL},
	{"{\"pattern\":\"^a\\\\.b$\"}", "\"axb\"", "pattern"},
	{"{\"pattern\":\"^a{2}$\"}", "\"aa\"", NULL},
	{"{\"pattern\":\"^a{$\"}", "\"a{\"", NULL},
	{"{\"pattern\":\"^\xc3\xa9+$\"}", "\"\xc3\xa9\xc3\xa9\"", NULL},
	{"{\"pattern\":\"^x$\"}", "\"x\\u0000y\"", "pattern"},
	{"{\"format\":\"date-time\"}", "\"2024-02-29T23:59:60.123+05:30\"",
	 NULL},
	{"{\"format\":\"date-time\"}", "\"2024-05-01t13:45:00z\"", NULL},
	{"{\"format\":\"date-time\"}", "\"2024-05-01 13:45:00Z\"",
	 "expected an RFC 3339 date-time"},
	{"{\"format\":\"date-time\"}", "\"2023-02-29T00:00:00Z\"", "date-time"},
	{"{\"format\":\"date-time\"}", "\"2024-05-01T24:00:00Z\"", "date-time"},
	{"{\"format\":\"date-time\"}", "\"2024-05-01T10:00:00\"", "date-time"},
	{"{\"format\":\"date-time\"}", "\"2024-05-01T10:00:00.Z\"",
	 "date-time"},
	{"{\"format\":\"date\"}", "\"2000-02-29\"", NULL},
	{"{\"format\":\"date\"}", "\"1900-02-29\"",
	 "expected an RFC 3339 date"},
	{"{\"format\":\"date\"}", "\"2024-13-01\"", "date"},
	{"{\"format\":\"date\"}", "\"2024-04-31\"", "date"},
	{"{\"format\":\"email\"}", "\"not an email\"", NULL},
	{"{\"format\":\"date\"}", "17", NULL},
	/* arrays */
	{"{\"items\":{\"type\":\"integer\"}}", "[1,2,3]", NULL},
	{"{\"items\":{\"type\":\"integer\"}}", "[1,2,\"x\"]",
	 "[2]: expected an integer, got \"x\""},
	{"{\"minItems\":1}", "[]",
	 "expected an array of at least 1 item, got []"},
	{"{\"maxItems\":2}", "[1,2,3]", "at most 2 items"},
	{"{\"minItems\":1,\"maxItems\":2}", "[1,2]", NULL},
	{"{\"uniqueItems\":true}", "[1,2,3]", NULL},
	{"{\"uniqueItems\":true}", "[1,{\"a\":1},1.0]",
	 "unique items ([0] and [2] are equal)"},
	{"{\"uniqueItems\":false}", "[1,1]", NULL},
	/* objects */
	{TOOL, "{\"service\":\"api\"}", NULL},
	{TOOL, "{}", "missing required property \"service\""},
	{TOOL, "{\"service\":42}", "service: expected a string, got 42"},
	{TOOL, "{\"service\":\"a\",\"time_range\":\"2x\"}",
	 "time_range: expected one of \"15m\", \"1h\", \"24h\", got \"2x\""},
	{TOOL, "{\"service\":\"a\",\"limit\":0}",
	 "limit: expected an integer >= 1 and <= 1000, got 0"},
	{TOOL, "{\"service\":\"a\",\"filters\":{}}",
	 "filters: missing required property \"status\""},
	{TOOL, "{\"service\":\"a\",\"filters\":{\"status\":1}}",
	 "filters.status: expected a string, got 1"},
	{TOOL, "{\"sevice\":\"a\",\"service\":\"a\"}",
	 "unexpected property \"sevice\": did you mean \"service\"?"},
	{TOOL, "{\"service\":\"a\",\"zzzzzz\":1}",
	 "unexpected property \"zzzzzz\" (allowed: service, time_range, "
	 "limit, filters)"},
	/* order: required before properties, properties before extras */
	{TOOL, "{\"x\":1,\"limit\":0}", "missing required property"},
	{TOOL, "{\"x\":1,\"service\":\"a\",\"limit\":0}", "limit: expected"},
	{"{\"type\":\"object\",\"additionalProperties\":false}", "{}", NULL},
	{"{\"type\":\"object\",\"additionalProperties\":false}", "{\"x\":1}",
	 "unexpected property \"x\" (this object takes no properties)"},
	{"{\"additionalProperties\":{\"type\":\"number\"}}",
	 "{\"a\":1,\"b c\":\"z\"}", "[\"b c\"]: expected a number, got \"z\""},
	{"{\"properties\":{\"a\":{\"properties\":{\"b\":{\"items\":{"
	 "\"type\":\"string\"}}}}}}",
	 "{\"a\":{\"b\":[\"x\",3]}}", "a.b[1]: expected a string, got 3"},
	{"{\"required\":[\"a\"]}", "[1]", NULL},
	{CONFORMANCE, "{\"name\":\"n\",\"address\":{\"street\":\"s\"}}", NULL},
	{CONFORMANCE, "{}", NULL},
	{CONFORMANCE, "{\"address\":{\"city\":5}}",
	 "address.city: expected a string, got 5"},
	{CONFORMANCE, "{\"name\":\"n\",\"phone\":\"1\"}",
	 "unexpected property \"phone\""},
	{CONFORMANCE, "[]", "expected an object, got []"},
	/* the 2026 fixture: allOf/anyOf, if/then/else, $anchor */
	{CONFORMANCE_2026, "{\"email\":\"a@b\"}", NULL},
	{CONFORMANCE_2026,
	 "{\"name\":\"n\",\"contactMethod\":\"phone\",\"phone\":\"1\","
	 "\"address\":{\"city\":\"c\"}}",
	 NULL},
	{CONFORMANCE_2026,
	 "{\"contactMethod\":\"email\",\"email\":\"a@b\",\"phone\":\"1\"}",
	 NULL},
	{CONFORMANCE_2026, "{\"name\":\"n\"}",
	 "expected any of (anyOf): (1) an object with property \"phone\", "
	 "(2) an object with property \"email\", got {\"name\":\"n\"}"},
	{CONFORMANCE_2026, "{\"contactMethod\":\"phone\",\"email\":\"a@b\"}",
	 "missing required property \"phone\" (by \"then\", as the value "
	 "matches \"if\")"},
	{CONFORMANCE_2026, "{\"contactMethod\":\"email\",\"phone\":\"1\"}",
	 "missing required property \"email\" (by \"else\", as the value "
	 "does not match \"if\")"},
	/* no contactMethod: "if" fails on required, so email is needed */
	{CONFORMANCE_2026, "{\"phone\":\"1\"}",
	 "missing required property \"email\" (by \"else\""},
	{CONFORMANCE_2026, "{\"contactMethod\":\"fax\",\"email\":\"a@b\"}",
	 "contactMethod: expected one of \"phone\", \"email\", got \"fax\""},
	{CONFORMANCE_2026, "{\"email\":5}", "email: expected a string, got 5"},
	{CONFORMANCE_2026, "{\"email\":\"a@b\",\"address\":{\"street\":1}}",
	 "address.street: expected a string, got 1"},
	{CONFORMANCE_2026, "{\"email\":\"a@b\",\"fax\":\"1\"}",
	 "unexpected property \"fax\""},
	/* if/then/else */
	{COND, "20", NULL},
	{COND, "15",
	 "expected a number that is a multiple of 10, got 15 (by \"then\""},
	{COND, "3", NULL},
	{COND, "7", "expected a number <= 5, got 7 (by \"else\""},
	{COND, "\"x\"", NULL}, /* "if" and "then" ignore strings */
	{"{\"if\":{\"type\":\"string\"},\"then\":{\"minLength\":2}}", "5",
	 NULL},
	{"{\"if\":{\"type\":\"string\"},\"then\":{\"minLength\":2}}", "\"a\"",
	 "at least 2 characters"},
	{"{\"if\":{\"type\":\"string\"},\"else\":{\"minimum\":0}}", "\"a\"",
	 NULL},
	{"{\"if\":{\"type\":\"string\"},\"else\":{\"minimum\":0}}", "-1",
	 "expected a number >= 0, got -1"},
	{"{\"if\":true,\"then\":false}", "1", "no value here"},
	{"{\"if\":false,\"then\":false}", "1", NULL},
	{"{\"then\":false,\"else\":false}", "1", NULL}, /* no if: no effect */
	/* an error inside "if" is never reported: it only chooses */
	{"{\"properties\":{\"a\":{\"if\":{\"required\":[\"x\"]},\"then\":{"
	 "\"required\":[\"y\"]}}}}",
	 "{\"a\":{\"x\":1}}", "a: missing required property \"y\""},
	{"{\"if\":{\"$ref\":\"#/$defs/big\"},\"then\":{\"required\":[\"why\"]"
	 "},\"$defs\":{\"big\":{\"properties\":{\"n\":{\"minimum\":100}},"
	 "\"required\":[\"n\"]}}}",
	 "{\"n\":500}", "missing required property \"why\""},
	{"{\"if\":{\"$ref\":\"#/$defs/big\"},\"then\":{\"required\":[\"why\"]"
	 "},\"$defs\":{\"big\":{\"properties\":{\"n\":{\"minimum\":100}},"
	 "\"required\":[\"n\"]}}}",
	 "{\"n\":5}", NULL},
	/* $anchor: tolerated, and a "#name" $ref finds it */
	{"{\"$defs\":{\"p\":{\"$anchor\":\"pos\",\"minimum\":0}},"
	 "\"properties\":{\"a\":{\"$ref\":\"#pos\"}}}",
	 "{\"a\":1}", NULL},
	{"{\"$defs\":{\"p\":{\"$anchor\":\"pos\",\"minimum\":0}},"
	 "\"properties\":{\"a\":{\"$ref\":\"#pos\"}}}",
	 "{\"a\":-1}", "a: expected a number >= 0, got -1"},
	{"{\"$anchor\":\"node\",\"properties\":{\"next\":{\"$ref\":"
	 "\"#node\"}},\"required\":[\"v\"]}",
	 "{\"v\":1,\"next\":{}}", "next: missing required property \"v\""},
	/* draft-07 has no $anchor: an ignored unknown keyword */
	{"{\"$schema\":\"http://json-schema.org/draft-07/schema#\","
	 "\"$anchor\":\"not a name\",\"type\":\"integer\"}",
	 "1", NULL},
	/* applicators */
	{"{\"$ref\":\"#/definitions/p\",\"definitions\":{\"p\":{\"minimum\":"
	 "0}}}",
	 "-1", "expected a number >= 0, got -1"},
	{"{\"$defs\":{\"p\":{\"type\":\"string\"}},\"properties\":{\"a\":{"
	 "\"$ref\":\"#/$defs/p\"}}}",
	 "{\"a\":\"x\"}", NULL},
	{"{\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"$ref\":"
	 "\"#/properties/a\"}}}",
	 "{\"b\":1.5}", "b: expected an integer"},
	{"{\"properties\":{\"next\":{\"$ref\":\"#\"}},\"required\":[\"v\"]}",
	 "{\"v\":1,\"next\":{\"v\":2,\"next\":{}}}",
	 "next.next: missing required property \"v\""},
	{"{\"allOf\":[{\"minimum\":1},{\"maximum\":3}]}", "2", NULL},
	{"{\"allOf\":[{\"minimum\":1},{\"maximum\":3}]}", "4",
	 "expected a number <= 3, got 4"},
	{"{\"anyOf\":[{\"type\":\"string\"},{\"type\":\"null\"}]}", "null",
	 NULL},
	{"{\"anyOf\":[{\"type\":\"string\"},{\"const\":3}]}", "4",
	 "expected any of (anyOf): (1) a string, (2) 3, got 4"},
	{"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}", "1", NULL},
	{"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}", "3",
	 "matches both 1 and 2"},
	{"{\"oneOf\":[{\"type\":\"integer\"},{\"minimum\":2}]}", "1.5",
	 "exactly one of (oneOf)"},
	{"{\"not\":{\"type\":\"string\"}}", "1", NULL},
	{"{\"not\":{\"type\":\"string\"}}", "\"s\"",
	 "does not match the \"not\""},
	/* draft-07: $ref overrides its siblings */
	{"{\"$schema\":\"http://json-schema.org/draft-07/schema#\","
	 "\"definitions\":{\"s\":{\"type\":\"string\"}},\"$ref\":"
	 "\"#/definitions/s\",\"maxLength\":1}",
	 "\"long\"", NULL},
	{"{\"$defs\":{\"s\":{\"type\":\"string\"}},\"$ref\":\"#/$defs/s\","
	 "\"maxLength\":1}",
	 "\"long\"", "at most 1 character"},
	/* annotations and unknown keywords are ignored */
	{"{\"title\":\"t\",\"description\":\"d\",\"examples\":[1],"
	 "\"$comment\":\"c\",\"$id\":\"x\",\"readOnly\":true,\"deprecated\":"
	 "true,\"x-vendor\":{\"type\":\"string\"},\"type\":\"integer\"}",
	 "1", NULL},
};

static void
test_validate(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(vcases) / sizeof(vcases[0]); i++) {
		const struct vcase *t = &vcases[i];
		struct jsonschema *s = compile_ok(t->schema);
		json_t *inst = load(t->inst);
		struct jsonschema_error verr;
		int rc = jsonschema_validate(s, inst, &verr);

		if (t->err == NULL && rc != STATUS_OK)
			fail_msg("case %zu: %s vs %s: unexpected error %s", i,
				 t->schema, t->inst, verr.msg);
		if (t->err != NULL &&
		    (rc != STATUS_INVALID || !strstr(verr.msg, t->err)))
			fail_msg("case %zu: %s vs %s: rc %d msg '%s', want "
				 "'%s'",
				 i, t->schema, t->inst, rc, verr.msg, t->err);
		/* the verdict does not depend on asking for a message */
		assert_int_equal(jsonschema_validate(s, inst, NULL), rc);
		json_decref(inst);
		jsonschema_free(s);
	}
}

static void
test_error_fields(void **state)
{
	struct jsonschema *s = compile_ok(TOOL);
	struct jsonschema_error e;
	json_t *inst = load("{\"service\":\"a\",\"limit\":0}");

	(void)state;
	assert_int_equal(jsonschema_validate(s, inst, &e), STATUS_INVALID);
	assert_string_equal(e.path, "limit");
	assert_string_equal(e.expected, "an integer >= 1 and <= 1000");
	assert_string_equal(e.received, "0");
	json_decref(inst);

	inst = load("{\"service\":\"a\",\"filters\":{}}");
	assert_int_equal(jsonschema_validate(s, inst, &e), STATUS_INVALID);
	assert_string_equal(e.path, "filters.status");
	assert_string_equal(e.expected, "property \"status\"");
	assert_string_equal(e.received, "");
	assert_string_equal(e.msg,
			    "filters: missing required property \"status\"");
	json_decref(inst);

	inst = load("{\"service\":\"a\",\"sevice\":[1]}");
	assert_int_equal(jsonschema_validate(s, inst, &e), STATUS_INVALID);
	assert_string_equal(e.path, "sevice");
	assert_string_equal(e.received, "[1]");
	json_decref(inst);

	/* long values are cut to about 60 characters */
	inst = load("{\"service\":[\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"]}");
	assert_int_equal(jsonschema_validate(s, inst, &e), STATUS_INVALID);
	assert_true(strlen(e.received) <= 60);
	assert_string_equal(e.received + strlen(e.received) - 3, "...");
	json_decref(inst);
	jsonschema_free(s);

	/* a branch of if/then/else names the field it wants */
	s = compile_ok(CONFORMANCE_2026);
	inst = load("{\"contactMethod\":\"phone\",\"email\":\"a@b\"}");
	assert_int_equal(jsonschema_validate(s, inst, &e), STATUS_INVALID);
	assert_string_equal(e.path, "phone");
	assert_string_equal(e.expected, "property \"phone\"");
	assert_string_equal(e.received, "");
	json_decref(inst);
	inst = load("{\"contactMethod\":\"email\",\"email\":7}");
	assert_int_equal(jsonschema_validate(s, inst, &e), STATUS_INVALID);
	assert_string_equal(e.path, "email");
	assert_string_equal(e.expected, "a string");
	assert_string_equal(e.received, "7");
	json_decref(inst);
	jsonschema_free(s);
}

struct ccase {
	const char *schema;
	int rc;
	const char *err;
};

static const struct ccase ccases[] = {
	{"{\"minimum\":\"1\"}", STATUS_INVALID,
	 "#: \"minimum\" must be a number, got \"1\""},
	{"{\"properties\":{\"limit\":{\"minimum\":\"1\"}}}", STATUS_INVALID,
	 "#/properties/limit: \"minimum\" must be a number, got \"1\""},
	{"{\"required\":\"x\"}", STATUS_INVALID,
	 "\"required\" must be an array of strings, got \"x\""},
	{"{\"required\":[1]}", STATUS_INVALID, "array of strings"},
	{"{\"properties\":[]}", STATUS_INVALID,
	 "\"properties\" must be an object, got []"},
	{"{\"type\":\"text\"}", STATUS_INVALID, "\"type\" must be one of"},
	{"{\"type\":[]}", STATUS_INVALID, "\"type\" must be one of"},
	{"{\"enum\":1}", STATUS_INVALID, "\"enum\" must be an array"},
	{"{\"maxLength\":-1}", STATUS_INVALID, "non-negative integer"},
	{"{\"minItems\":1.5}", STATUS_INVALID, "non-negative integer"},
	{"{\"multipleOf\":0}", STATUS_INVALID, "greater than 0"},
	{"{\"uniqueItems\":1}", STATUS_INVALID, "must be a boolean"},
	{"{\"format\":1}", STATUS_INVALID, "\"format\" must be a string"},
	{"{\"items\":[{}]}", STATUS_INVALID,
	 "\"items\" must be a schema (arrays of schemas are not supported)"},
	{"{\"items\":1}", STATUS_INVALID,
	 "#/items: a schema must be an object or a boolean, got 1"},
	{"{\"additionalProperties\":\"no\"}", STATUS_INVALID,
	 "#/additionalProperties: a schema must be"},
	{"{\"allOf\":[]}", STATUS_INVALID, "non-empty array of schemas"},
	{"{\"anyOf\":{}}", STATUS_INVALID, "non-empty array of schemas"},
	{"{\"oneOf\":[{},3]}", STATUS_INVALID, "#/oneOf/1: a schema must be"},
	{"{\"not\":null}", STATUS_INVALID, "#/not: a schema must be"},
	{"{\"$defs\":{\"a~b/c\":{\"type\":1}}}", STATUS_INVALID,
	 "#/$defs/a~0b~1c: \"type\" must be"},
	{"{\"$defs\":[]}", STATUS_INVALID, "\"$defs\" must be an object"},
	{"[]", STATUS_INVALID, "#: a schema must be an object or a boolean"},
	{"{\"$ref\":1}", STATUS_INVALID, "\"$ref\" must be a string"},
	{"{\"$ref\":\"#/$defs/missing\"}", STATUS_INVALID,
	 "\"$ref\" \"#/$defs/missing\" does not point to a schema"},
	{"{\"$ref\":\"#/properties\",\"properties\":{}}", STATUS_INVALID,
	 "does not point to a schema"},
	{"{\"$ref\":\"http://example.com/s.json\"}", STATUS_UNSUPPORTED,
	 "only local references"},
	{"{\"$ref\":\"#anchor\"}", STATUS_INVALID,
	 "\"$ref\" \"#anchor\" does not point to a schema"},
	{"{\"$ref\":\"#no such anchor\"}", STATUS_UNSUPPORTED, "only local"},
	{"{\"$schema\":\"http://json-schema.org/draft-07/schema#\","
	 "\"$ref\":\"#a\"}",
	 STATUS_UNSUPPORTED, "only local"},
	{"{\"$anchor\":1}", STATUS_INVALID, "\"$anchor\" must be a string"},
	{"{\"$defs\":{\"x\":{\"$anchor\":\"9lives\"}}}", STATUS_INVALID,
	 "#/$defs/x: \"$anchor\" must be a name"},
	{"{\"$defs\":{\"x\":{\"$anchor\":\"a\"},\"y\":{\"$anchor\":"
	 "\"a\"}}}",
	 STATUS_INVALID, "#/$defs/y: \"$anchor\" \"a\" is defined twice"},
	{"{\"$defs\":{\"a\":{\"$anchor\":\"a\",\"allOf\":[{\"$ref\":"
	 "\"#a\"}]}}}",
	 STATUS_INVALID, "\"$ref\" \"#a\" loops"},
	{"{\"$schema\":\"http://json-schema.org/draft-04/schema#\"}",
	 STATUS_UNSUPPORTED, "\"$schema\" \"http://json-schema.org/draft-04"},
	{"{\"$schema\":5}", STATUS_INVALID, "\"$schema\" must be a string"},
	{"{\" \":1,\"f\":1,\"Items\":1,\"else \":1,\"properties\":{\"x\":{"
	 "\"Contains\":1,\"contains\":1}}}",
	 STATUS_UNSUPPORTED,
	 "#/properties/x: keyword \"contains\" is not supported"},
	{"{\"minContains\":1}", STATUS_UNSUPPORTED, "keyword \"minContains\""},
	{"{\"unevaluatedProperties\":false}", STATUS_UNSUPPORTED,
	 "keyword \"unevaluatedProperties\" is not supported"},
	{"{\"properties\":{\"a\":{\"if\":1}}}", STATUS_INVALID,
	 "#/properties/a/if: a schema must be an object or a boolean, got 1"},
	{"{\"if\":{},\"then\":{\"minimum\":\"0\"}}", STATUS_INVALID,
	 "#/then: \"minimum\" must be a number"},
	{"{\"else\":[]}", STATUS_INVALID, "#/else: a schema must be"},
	{"{\"if\":{\"$ref\":\"#\"}}", STATUS_INVALID, "loops"},
	{"{\"$defs\":{\"a\":{\"if\":{},\"else\":{\"$ref\":\"#/$defs/a\"}}}}",
	 STATUS_INVALID, "#/$defs/a/else: \"$ref\" \"#/$defs/a\" loops"},
	{"{\"pattern\":1}", STATUS_INVALID, "\"pattern\" must be a string"},
	{"{\"pattern\":\"(?=a)\"}", STATUS_UNSUPPORTED, "lookahead"},
	{"{\"pattern\":\"(?<!a)b\"}", STATUS_UNSUPPORTED, "lookbehind"},
	{"{\"pattern\":\"(a)\\\\1\"}", STATUS_UNSUPPORTED, "backreferences"},
	{"{\"pattern\":\"(?<n>a)\\\\k<n>\"}", STATUS_UNSUPPORTED,
	 "backreferences"},
	{"{\"pattern\":\"\\\\p{L}\"}", STATUS_UNSUPPORTED, "\\p{...}"},
	{"{\"pattern\":\"[\\\\D]\"}", STATUS_UNSUPPORTED, "inside [...]"},
	{"{\"pattern\":\"(a\"}", STATUS_INVALID, "unbalanced parenthesis"},
	{"{\"pattern\":\"a)\"}", STATUS_INVALID, "unbalanced parenthesis"},
	{"{\"pattern\":\"[a-\"}", STATUS_INVALID, "unterminated [...]"},
	{"{\"pattern\":\"[z-a]\"}", STATUS_INVALID, "bad range"},
	{"{\"pattern\":\"a\\\\\"}", STATUS_INVALID, "ends in a backslash"},
	{"{\"pattern\":\"((a{100}){100}){100}\"}", STATUS_LIMIT, "too complex"},
	{"{\"pattern\":\"a{2000}\"}", STATUS_LIMIT, "at most 1000"},
	{"{\"pattern\":\"a++\"}", STATUS_INVALID, "nothing to repeat"},
	{"{\"pattern\":\"(*a)\"}", STATUS_INVALID, "nothing to repeat"},
	{"{\"pattern\":\"^?\"}", STATUS_INVALID, "nothing to repeat"},
	{"{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":"
	 "\"#/$defs/a\"}}}",
	 STATUS_INVALID, "loops back without descending"},
	{"{\"$defs\":{\"a\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"}]}}}",
	 STATUS_INVALID, "#/$defs/a/allOf/0: \"$ref\" \"#/$defs/a\" loops"},
	{"{\"anyOf\":[{\"not\":{\"$ref\":\"#\"}}]}", STATUS_INVALID, "loops"},
};

static void
test_compile_errors(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(ccases) / sizeof(ccases[0]); i++) {
		json_t *j = load(ccases[i].schema);
		struct jsonschema *s = (struct jsonschema *)1;
		char err[256];
		int rc = jsonschema_compile(j, &s, err, sizeof(err));

		if (rc != ccases[i].rc || !strstr(err, ccases[i].err))
			fail_msg("case %zu: %s: rc %d '%s', want %d '%s'", i,
				 ccases[i].schema, rc, err, ccases[i].rc,
				 ccases[i].err);
		assert_null(s);
		json_decref(j);
	}
}

struct dcase {
	const char *schema;
	const char *inst;
	const char *want;
};

static const struct dcase dcases[] = {
	{"{\"properties\":{\"a\":{\"default\":1},\"b\":{\"default\":[1]}}}",
	 "{\"b\":2}", "{\"a\":1,\"b\":2}"},
	{"{\"properties\":{\"f\":{\"properties\":{\"n\":{\"default\":{\"x\":"
	 "true}}}}}}",
	 "{\"f\":{}}", "{\"f\":{\"n\":{\"x\":true}}}"},
	/* missing containers are not created */
	{"{\"properties\":{\"f\":{\"properties\":{\"n\":{\"default\":1}}}}}",
	 "{}", "{}"},
	{"{\"items\":{\"properties\":{\"k\":{\"default\":\"d\"}}}}",
	 "[{},{\"k\":\"x\"},3]", "[{\"k\":\"d\"},{\"k\":\"x\"},3]"},
	{"{\"additionalProperties\":{\"properties\":{\"k\":{\"default\":0}}}}",
	 "{\"a\":{},\"b\":{}}", "{\"a\":{\"k\":0},\"b\":{\"k\":0}}"},
	{"{\"$defs\":{\"o\":{\"properties\":{\"k\":{\"default\":0}}}},"
	 "\"properties\":{\"x\":{\"$ref\":\"#/$defs/o\"}}}",
	 "{\"x\":{}}", "{\"x\":{\"k\":0}}"},
	{"{\"allOf\":[{\"properties\":{\"a\":{\"default\":1}}},{\"properties\":"
	 "{\"b\":{\"default\":2}}}]}",
	 "{}", "{\"a\":1,\"b\":2}"},
	{"{\"anyOf\":[{\"properties\":{\"a\":{\"default\":1}}}]}", "{}", "{}"},
	/* which branch applies depends on the value: no defaults there */
	{"{\"if\":{\"properties\":{\"a\":{\"default\":1}}},\"then\":{"
	 "\"properties\":{\"b\":{\"default\":2}}},\"else\":{\"properties\":"
	 "{\"c\":{\"default\":3}}}}",
	 "{}", "{}"},
	{"{\"properties\":{\"a\":{\"default\":1}}}", "[5]", "[5]"},
};

static void
test_defaults(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(dcases) / sizeof(dcases[0]); i++) {
		struct jsonschema *s = compile_ok(dcases[i].schema);
		json_t *inst = load(dcases[i].inst);
		json_t *want = load(dcases[i].want);

		assert_int_equal(jsonschema_apply_defaults(s, inst), STATUS_OK);
		if (!json_equal(inst, want)) {
			char *got = json_dumps(inst, JSON_COMPACT);

			fail_msg("case %zu: got %s, want %s", i, got,
				 dcases[i].want);
		}
		json_decref(inst);
		json_decref(want);
		jsonschema_free(s);
	}
}

/* The inserted default is a copy: changing it leaves the schema alone. */
static void
test_default_is_copy(void **state)
{
	struct jsonschema *s =
		compile_ok("{\"properties\":{\"a\":{\"default\":{\"n\":1}}}}");
	json_t *one = json_object(), *two = json_object();

	(void)state;
	assert_int_equal(jsonschema_apply_defaults(s, one), STATUS_OK);
	json_object_set_new(json_object_get(one, "a"), "n", json_integer(9));
	assert_int_equal(jsonschema_apply_defaults(s, two), STATUS_OK);
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(two, "a"), "n")),
			 1);
	json_decref(one);
	json_decref(two);
	jsonschema_free(s);
}

/* Builds n nested levels of pre + inner + post. */
static char *
nest(int n, const char *pre, const char *inner, const char *post)
{
	size_t len = strlen(inner) + (size_t)n * (strlen(pre) + strlen(post));
	char *p = malloc(len + 1);

	assert_non_null(p);
	p[0] = '\0';
	for (int i = 0; i < n; i++)
		strncat(p, pre, len);
	strncat(p, inner, len);
	for (int i = 0; i < n; i++)
		strncat(p, post, len);
	return p;
}

static void
test_depth(void **state)
{
	const char *rec = "{\"$defs\":{\"n\":{\"type\":\"array\",\"items\":{"
			  "\"$ref\":\"#/$defs/n\"}}},\"$ref\":\"#/$defs/n\"}";
	struct jsonschema *s = compile_ok(rec);
	struct jsonschema_error e;
	char *text;
	json_t *j;
	char err[256];

	(void)state;
	text = nest(10, "[", "", "]");
	j = load(text);
	assert_int_equal(jsonschema_validate(s, j, &e), STATUS_OK);
	assert_int_equal(jsonschema_apply_defaults(s, j), STATUS_OK);
	json_decref(j);
	free(text);

	text = nest(100, "[", "", "]");
	j = load(text);
	assert_int_equal(jsonschema_validate(s, j, &e), STATUS_LIMIT);
	assert_non_null(strstr(e.msg, "deeper than 64"));
	assert_int_equal(jsonschema_validate(s, j, NULL), STATUS_LIMIT);
	assert_int_equal(jsonschema_apply_defaults(s, j), STATUS_LIMIT);
	json_decref(j);
	free(text);
	jsonschema_free(s);

	/* a limit inside anyOf is a limit, not a failed alternative */
	s = compile_ok("{\"anyOf\":[{\"$ref\":\"#/$defs/n\"}],\"$defs\":{\"n\":"
		       "{\"items\":{\"$ref\":\"#/$defs/n\"}}}}");
	text = nest(100, "[", "", "]");
	j = load(text);
	assert_int_equal(jsonschema_validate(s, j, &e), STATUS_LIMIT);
	json_decref(j);
	free(text);
	jsonschema_free(s);

	text = nest(40, "{\"items\":", "{}", "}");
	j = load(text);
	assert_int_equal(jsonschema_compile(j, &s, err, sizeof(err)),
			 STATUS_OK);
	jsonschema_free(s);
	json_decref(j);
	free(text);

	text = nest(70, "{\"items\":", "{}", "}");
	j = load(text);
	assert_int_equal(jsonschema_compile(j, &s, err, sizeof(err)),
			 STATUS_LIMIT);
	assert_null(s);
	if (strstr(err, "deeper than 64") == NULL)
		fail_msg("%s", err);
	json_decref(j);
	free(text);
}

/* anyOf nested in anyOf doubles the work per level: it must stop. */
static void
test_work_limit(void **state)
{
	const char *sch = "{\"$defs\":{\"n\":{\"anyOf\":[{\"items\":{\"$ref\":"
			  "\"#/$defs/n\"}},{\"items\":{\"$ref\":\"#/$defs/n\"}}"
			  "]}},\"$ref\":\"#/$defs/n\",\"type\":\"array\"}";
	struct jsonschema *s = compile_ok(sch);
	char *text = nest(40, "[", "1", "]");
	json_t *j = load(text);
	struct jsonschema_error e;

	(void)state;
	/* the first alternative matches at every level: linear */
	assert_int_equal(jsonschema_validate(s, j, &e), STATUS_OK);
	json_decref(j);
	free(text);
	jsonschema_free(s);
	/* both alternatives fail on the leaf: 2^40 paths without a limit */
	s = compile_ok("{\"$defs\":{\"n\":{\"anyOf\":[{\"type\":\"array\","
		       "\"items\":{\"$ref\":\"#/$defs/n\"}},{\"type\":"
		       "\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}]}},"
		       "\"$ref\":\"#/$defs/n\"}");
	text = nest(40, "[", "1", "]");
	j = load(text);
	assert_int_equal(jsonschema_validate(s, j, &e), STATUS_LIMIT);
	assert_non_null(strstr(e.msg, "too complex"));
	json_decref(j);
	free(text);
	jsonschema_free(s);
}

static void
test_big_unique(void **state)
{
	struct jsonschema *s = compile_ok("{\"uniqueItems\":true}");
	json_t *a = json_array();

	(void)state;
	for (int i = 0; i < 5000; i++)
		json_array_append_new(a, json_integer(i));
	assert_int_equal(jsonschema_validate(s, a, NULL), STATUS_LIMIT);
	json_decref(a);
	jsonschema_free(s);
}

/* err and verr may be NULL; free accepts NULL. */
static void
test_null_args(void **state)
{
	json_t *bad = load("{\"minimum\":\"1\"}"), *inst = load("0");
	struct jsonschema *s = NULL;

	(void)state;
	assert_int_equal(jsonschema_compile(bad, &s, NULL, 0), STATUS_INVALID);
	assert_null(s);
	jsonschema_free(NULL);
	s = compile_ok("{\"minimum\":1}");
	assert_int_equal(jsonschema_validate(s, inst, NULL), STATUS_INVALID);
	jsonschema_free(s);
	json_decref(bad);
	json_decref(inst);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_validate),
		cmocka_unit_test(test_error_fields),
		cmocka_unit_test(test_compile_errors),
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_default_is_copy),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_work_limit),
		cmocka_unit_test(test_big_unique),
		cmocka_unit_test(test_null_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
