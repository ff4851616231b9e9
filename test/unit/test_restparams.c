/*
 * test_restparams.c - unit tests for server/rest/params (query parameters
 * onto tool arguments, typed by the inputSchema): each type, arrays as
 * repeated and comma-separated parameters, and every refusal with the
 * field, expectation and value it names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "rest/params.h"

static const char PROPS[] =
	"{\"limit\":{\"type\":\"integer\"},\"ratio\":{\"type\":\"number\"},"
	"\"deep\":{\"type\":\"boolean\"},\"name\":{\"type\":[\"string\","
	"\"null\"]},\"sort\":{\"enum\":[\"a\",\"b\"]},\"level\":{\"enum\":[1,2]"
	"},"
	"\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
	"\"codes\":{\"type\":\"array\",\"items\":{\"type\":\"integer\"}},"
	"\"attrs\":{\"type\":\"object\"}}";

static json_t *
load(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (j == NULL)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return j;
}

/* Adds each key=value in turn; returns args as compact JSON (caller
 * frees) or NULL when a parameter was refused (*err filled). */
static char *
run(const char *const *kv, size_t n, int *rc, struct rest_param_error *err)
{
	json_t *props = load(PROPS), *args = json_object();
	char *out = NULL;

	*rc = STATUS_OK;
	for (size_t i = 0; i < n && *rc == STATUS_OK; i++)
		*rc = rest_param_add(props, args, kv[2 * i], kv[2 * i + 1],
				     err);
	if (*rc == STATUS_OK)
		out = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(args);
	json_decref(props);
	return out;
}

static void
test_types(void **state)
{
	static const struct {
		const char *kv[6];
		size_t n;
		const char *want;
	} cases[] = {
		{{"limit", "42"}, 1, "{\"limit\":42}"},
		{{"limit", "-7"}, 1, "{\"limit\":-7}"},
		{{"ratio", "0.25"}, 1, "{\"ratio\":0.25}"},
		{{"deep", "true"}, 1, "{\"deep\":true}"},
		{{"deep", "0"}, 1, "{\"deep\":false}"},
		{{"deep", NULL}, 1, "{\"deep\":true}"},
		{{"name", "checkout"}, 1, "{\"name\":\"checkout\"}"},
		{{"name", "' OR 1=1 --"}, 1, "{\"name\":\"' OR 1=1 --\"}"},
		{{"sort", "b"}, 1, "{\"sort\":\"b\"}"},
		{{"level", "2"}, 1, "{\"level\":2}"},
		{{"tags", "a,b", "tags", "c"},
		 2,
		 "{\"tags\":[\"a\",\"b\",\"c\"]}"},
		{{"tags", "a,,b"}, 1, "{\"tags\":[\"a\",\"b\"]}"},
		{{"codes", "200,404"}, 1, "{\"codes\":[200,404]}"},
		{{"attrs", "{\"k\":\"v\"}"}, 1, "{\"attrs\":{\"k\":\"v\"}}"},
		{{"limit", "1", "name", "x", "deep", "false"},
		 3,
		 "{\"deep\":false,\"limit\":1,\"name\":\"x\"}"},
	};
	struct rest_param_error err;
	int rc;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = run(cases[i].kv, cases[i].n, &rc, &err);

		if (got == NULL)
			fail_msg("case %zu refused: %s", i, err.message);
		assert_string_equal(got, cases[i].want);
		free(got);
	}
}

static void
test_refusals(void **state)
{
	static const struct {
		const char *kv[4];
		size_t n;
		int rc;
		const char *field, *expected, *given;
	} cases[] = {
		{{"bogus", "1"},
		 1,
		 STATUS_NOTFOUND,
		 "bogus",
		 "one of the accepted parameters",
		 "bogus"},
		{{"limit", "ten"},
		 1,
		 STATUS_INVALID,
		 "limit",
		 "an integer",
		 "ten"},
		{{"limit", "1.5"},
		 1,
		 STATUS_INVALID,
		 "limit",
		 "an integer",
		 "1.5"},
		{{"limit", ""}, 1, STATUS_INVALID, "limit", "an integer", ""},
		{{"limit", "99999999999999999999"},
		 1,
		 STATUS_INVALID,
		 "limit",
		 "an integer",
		 "99999999999999999999"},
		{{"ratio", "inf"},
		 1,
		 STATUS_INVALID,
		 "ratio",
		 "a number",
		 "inf"},
		{{"deep", "yes"},
		 1,
		 STATUS_INVALID,
		 "deep",
		 "true or false",
		 "yes"},
		{{"codes", "200,x"},
		 1,
		 STATUS_INVALID,
		 "codes",
		 "an integer",
		 "x"},
		{{"attrs", "[1]"},
		 1,
		 STATUS_INVALID,
		 "attrs",
		 "a JSON object",
		 "[1]"},
		{{"name", "a", "name", "b"},
		 2,
		 STATUS_INVALID,
		 "name",
		 "one value",
		 "b"},
		{{"name", "\xff\xfe"},
		 1,
		 STATUS_INVALID,
		 "name",
		 "a UTF-8 string",
		 "\xff\xfe"},
	};
	struct rest_param_error err;
	int rc;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = run(cases[i].kv, cases[i].n, &rc, &err);

		if (got != NULL)
			fail_msg("case %zu accepted: %s", i, got);
		assert_int_equal(rc, cases[i].rc);
		assert_string_equal(err.field, cases[i].field);
		assert_string_equal(err.expected, cases[i].expected);
		assert_string_equal(err.given, cases[i].given);
		assert_non_null(strstr(err.message, cases[i].field));
	}
}

static void
test_long_value(void **state)
{
	char *big = malloc(REST_PARAM_MAX + 2);
	const char *kv[2] = {"name", big};
	struct rest_param_error err;
	int rc;

	(void)state;
	assert_non_null(big);
	memset(big, 'a', REST_PARAM_MAX + 1);
	big[REST_PARAM_MAX + 1] = '\0';
	assert_null(run(kv, 1, &rc, &err));
	assert_int_equal(rc, STATUS_INVALID);
	assert_non_null(strstr(err.message, "longer than"));
	big[REST_PARAM_MAX] = '\0'; /* at the limit: kept */
	free(run(kv, 1, &rc, &err));
	assert_int_equal(rc, STATUS_OK);
	free(big);
}

static void
test_type_names(void **state)
{
	static const struct {
		const char *schema, *type;
	} cases[] = {
		{"{\"type\":\"integer\"}", "integer"},
		{"{\"type\":[\"null\",\"number\"]}", "number"},
		{"{\"enum\":[true]}", "boolean"},
		{"{\"enum\":[1.5]}", "number"},
		{"{\"description\":\"x\"}", "string"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *s = load(cases[i].schema);

		assert_string_equal(rest_param_type(s), cases[i].type);
		json_decref(s);
	}
}

/* Kiali's camelCase names onto the tool's snake_case ones, and only those. */
static void
test_snake_args(void **state)
{
	json_t *props = json_pack("{s:{}, s:{}, s:{}, s:{}}", "trace_id",
				  "lookback_seconds", "limit", "graphType");
	json_t *args = json_pack("{s:s, s:i, s:i, s:s, s:b, s:s}", "traceId",
				 "abcd1234", "lookbackSeconds", 60, "limit", 3,
				 "graphType", "app", "errorOnly", 1,
				 "trace_id_x", "y");
	json_t *both = json_pack("{s:s, s:s}", "traceId", "camel", "trace_id",
				 "snake");

	(void)state;
	assert_int_equal(rest_snake_args(props, args), STATUS_OK);
	assert_string_equal(
		json_string_value(json_object_get(args, "trace_id")),
		"abcd1234");
	assert_int_equal(
		json_integer_value(json_object_get(args, "lookback_seconds")),
		60);
	assert_null(json_object_get(args, "traceId"));
	assert_null(json_object_get(args, "lookbackSeconds"));
	/* a property of its own (graphType) stays; no snake property
	 * (errorOnly -> error_only), or no capital: left to the schema */
	assert_non_null(json_object_get(args, "graphType"));
	assert_non_null(json_object_get(args, "errorOnly"));
	assert_non_null(json_object_get(args, "trace_id_x"));
	assert_int_equal(json_object_size(args), 6);
	/* both given: the snake_case value wins, the other is refused later */
	assert_int_equal(rest_snake_args(props, both), STATUS_OK);
	assert_string_equal(
		json_string_value(json_object_get(both, "trace_id")), "snake");
	assert_non_null(json_object_get(both, "traceId"));
	json_decref(props);
	json_decref(args);
	json_decref(both);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_types),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_long_value),
		cmocka_unit_test(test_type_names),
		cmocka_unit_test(test_snake_args),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
