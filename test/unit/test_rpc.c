/*
 * test_rpc.c - unit tests for server/mcp/rpc: classifying JSON-RPC messages as
 * MCP uses them (MCP-DIGEST A1), the shapes of results, errors and
 * notifications, the pre-serialized result text and id text for logs.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "mcp/rpc.h"

static json_t *
parse(const char *text)
{
	json_error_t err;
	json_t *v = json_loads(text, JSON_DECODE_ANY, &err);

	if (v == NULL)
		fail_msg("bad test JSON %s: %s", text, err.text);
	return v;
}

/* ---- rpc_classify ----------------------------------------------------- */

struct classify_case {
	const char *json;
	enum rpc_kind kind;
	const char *id;	 /* expected *id as compact JSON; NULL: *id NULL */
	const char *why; /* substring of *why for RPC_INVALID */
};

static const struct classify_case classify_cases[] = {
	/* requests: ids are integers or strings; 0 and "" count */
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", RPC_REQUEST, "1",
	 NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\","
	 "\"params\":{}}",
	 RPC_REQUEST, "0", NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":-5,\"method\":\"ping\"}", RPC_REQUEST,
	 "-5", NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"tools/list\"}",
	 RPC_REQUEST, "\"abc\"", NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"ping\"}", RPC_REQUEST,
	 "\"\"", NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":9007199254740993,\"method\":\"ping\"}",
	 RPC_REQUEST, "9007199254740993", NULL},
	{"{\"method\":\"ping\",\"id\":2,\"jsonrpc\":\"2.0\",\"params\":"
	 "{\"_meta\":{\"progressToken\":1}}}",
	 RPC_REQUEST, "2", NULL},
	/* notifications: no id */
	{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
	 RPC_NOTIFICATION, NULL, NULL},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
	 "\"params\":{\"requestId\":3}}",
	 RPC_NOTIFICATION, NULL, NULL},
	/* responses: exactly one of result and error */
	{"{\"jsonrpc\":\"2.0\",\"id\":\"sx-1\",\"result\":{}}", RPC_RESPONSE,
	 "\"sx-1\"", NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"role\":\"assistant\"}}",
	 RPC_RESPONSE, "0", NULL},
	{"{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-1,\"message\":"
	 "\"no\"}}",
	 RPC_RESPONSE, "7", NULL},
	/* invalid: not an object */
	{"[]", RPC_INVALID, NULL, "object"},
	{"\"ping\"", RPC_INVALID, NULL, "object"},
	{"null", RPC_INVALID, NULL, "object"},
	/* invalid: the version */
	{"{\"id\":1,\"method\":\"ping\"}", RPC_INVALID, "1", "jsonrpc"},
	{"{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", RPC_INVALID, "1",
	 "jsonrpc"},
	{"{\"jsonrpc\":2.0,\"id\":1,\"method\":\"ping\"}", RPC_INVALID, "1",
	 "jsonrpc"},
	{"{\"jsonrpc\":\"2.0 \",\"id\":\"a\",\"method\":\"ping\"}", RPC_INVALID,
	 "\"a\"", "jsonrpc"},
	/* invalid: ids MCP forbids (null, fractions, objects, arrays,
	 * booleans); the bad id is not handed back */
	{"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", RPC_INVALID,
	 NULL, "id"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", RPC_INVALID,
	 NULL, "id"},
	{"{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}",
	 RPC_INVALID, NULL, "id"},
	{"{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", RPC_INVALID,
	 NULL, "id"},
	{"{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", RPC_INVALID,
	 NULL, "id"},
	{"{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}", RPC_INVALID, NULL,
	 "id"},
	/* invalid: the method */
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":5}", RPC_INVALID, "1",
	 "method"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":null}", RPC_INVALID, "1",
	 "method"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\"}", RPC_INVALID, "1",
	 "method"},
	{"{\"jsonrpc\":\"2.0\",\"method\":[\"ping\"]}", RPC_INVALID, NULL,
	 "method"},
	/* invalid: a request with a result or an error */
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"result\":{}}",
	 RPC_INVALID, "1", "result"},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"error\":{}}", RPC_INVALID,
	 NULL, "error"},
	/* invalid: params that are not structured */
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":1}",
	 RPC_INVALID, "1", "params"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
	 "\"x\"}",
	 RPC_INVALID, "1", "params"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":null}",
	 RPC_INVALID, "1", "params"},
	{"{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":true}", RPC_INVALID,
	 NULL, "params"},
	/* invalid: responses with both or neither */
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{},\"error\":{\"code\":1,"
	 "\"message\":\"m\"}}",
	 RPC_INVALID, "1", "exactly one"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1}", RPC_INVALID, "1", "exactly one"},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":\"boom\"}", RPC_INVALID, "1",
	 "error"},
	/* invalid: neither method nor id */
	{"{\"jsonrpc\":\"2.0\"}", RPC_INVALID, NULL, "method"},
	{"{\"jsonrpc\":\"2.0\",\"result\":{}}", RPC_INVALID, NULL, "method"},
	{"{}", RPC_INVALID, NULL, "jsonrpc"},
};

static void
test_classify_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(classify_cases) / sizeof(classify_cases[0]);
	     i++) {
		const struct classify_case *c = &classify_cases[i];
		json_t *msg = parse(c->json);
		const char *why = (const char *)1;
		const json_t *id = (const json_t *)1;
		enum rpc_kind k = rpc_classify(msg, &why, &id);

		if (k != c->kind)
			fail_msg("%s: kind %d, want %d (%s)", c->json, k,
				 c->kind, why ? why : "");
		if (c->id == NULL) {
			if (id != NULL)
				fail_msg("%s: id should be NULL", c->json);
		} else {
			char *got;

			if (id == NULL)
				fail_msg("%s: id missing", c->json);
			got = json_dumps(id, JSON_ENCODE_ANY | JSON_COMPACT);
			if (strcmp(got, c->id) != 0)
				fail_msg("%s: id %s, want %s", c->json, got,
					 c->id);
			free(got);
			/* The id is borrowed from the message itself. */
			assert_ptr_equal(id, json_object_get(msg, "id"));
		}
		if (c->kind == RPC_INVALID) {
			if (why == NULL || strstr(why, c->why) == NULL)
				fail_msg("%s: why \"%s\" should mention %s",
					 c->json, why ? why : "(null)", c->why);
		} else if (why != NULL) {
			fail_msg("%s: why set on a valid message", c->json);
		}
		json_decref(msg);
	}
}

/*
 * MCP params are objects (SCHEMA Request.params: { [key: string]:
 * unknown }); rpc_classify's own message says "\"params\" must be an
 * object".  An array is by-position JSON-RPC, which MCP never uses.
 */
static void
test_classify_params_array(void **state)
{
	json_t *msg = parse(
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":"
		"[1,2]}");
	const char *why; /* static text: valid after msg is freed */
	const json_t *id;
	enum rpc_kind kind;

	(void)state;
	kind = rpc_classify(msg, &why, &id);
	json_decref(msg);
	assert_int_equal(kind, RPC_INVALID);
	assert_non_null(why);
	assert_non_null(strstr(why, "params"));
}

/* ---- builders --------------------------------------------------------- */

static void
assert_json_equal_text(const json_t *v, const char *want)
{
	json_t *w = parse(want);

	if (!json_equal(v, w)) {
		char *got = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);

		fail_msg("got %s, want %s", got ? got : "(null)", want);
	}
	json_decref(w);
}

static void
test_result_shape(void **state)
{
	json_t *id = json_integer(0);
	json_t *sid = json_string("7");
	json_t *r;

	(void)state;
	r = rpc_result(id, json_pack("{s:i}", "a", 1));
	assert_json_equal_text(r, "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":"
				  "{\"a\":1}}");
	/* Exactly the three members. */
	assert_int_equal(json_object_size(r), 3);
	json_decref(r);
	/* The id keeps its type: "7" stays a string. */
	r = rpc_result(sid, json_object());
	assert_json_equal_text(r, "{\"jsonrpc\":\"2.0\",\"id\":\"7\","
				  "\"result\":{}}");
	assert_true(json_is_string(json_object_get(r, "id")));
	json_decref(r);
	/* The id is borrowed: still ours. */
	assert_int_equal(id->refcount, 1);
	assert_null(rpc_result(id, NULL));
	json_decref(id);
	json_decref(sid);
}

static void
test_error_shape(void **state)
{
	json_t *id = json_string("q");
	json_t *e;

	(void)state;
	e = rpc_error(id, RPC_METHOD_NOT_FOUND, "no such method", NULL);
	assert_json_equal_text(e, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"error\":"
				  "{\"code\":-32601,\"message\":\"no such "
				  "method\"}}");
	json_decref(e);
	/* No id: null, as JSON-RPC 2.0 and the SDKs answer. */
	e = rpc_error(NULL, RPC_PARSE_ERROR, "bad", NULL);
	assert_json_equal_text(e, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":"
				  "{\"code\":-32700,\"message\":\"bad\"}}");
	json_decref(e);
	/* data is stolen and carried. */
	e = rpc_error(id, RPC_RESOURCE_NOT_FOUND, "Resource not found",
		      json_pack("{s:s}", "uri", "test://x"));
	assert_json_equal_text(e, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"error\":"
				  "{\"code\":-32002,\"message\":\"Resource not "
				  "found\",\"data\":{\"uri\":\"test://x\"}}}");
	json_decref(e);
	assert_int_equal(id->refcount, 1);
	json_decref(id);
}

static void
test_notification_shape(void **state)
{
	json_t *n;

	(void)state;
	n = rpc_notification("notifications/tools/list_changed", NULL);
	assert_json_equal_text(n, "{\"jsonrpc\":\"2.0\",\"method\":"
				  "\"notifications/tools/list_changed\"}");
	assert_null(json_object_get(n, "id"));
	json_decref(n);
	n = rpc_notification(
		"notifications/progress",
		json_pack("{s:i,s:i}", "progressToken", 1, "progress", 50));
	assert_json_equal_text(n, "{\"jsonrpc\":\"2.0\",\"method\":"
				  "\"notifications/progress\",\"params\":{"
				  "\"progressToken\":1,\"progress\":50}}");
	json_decref(n);
}

/* rpc_result_text is byte-for-byte what jansson would encode. */
static void
test_result_text_table(void **state)
{
	static const char *const ids[] = {
		"0",	      "42", "-1", "\"abc\"", "\"with \\\"quotes\\\"\"",
		"\"\\u00e9\""};
	static const char *const results[] = {"{}", "{\"tools\":[]}",
					      "{\"a\":[1,2,{\"b\":null}]}"};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		for (j = 0; j < sizeof(results) / sizeof(results[0]); j++) {
			json_t *id = parse(ids[i]);
			json_t *res = parse(results[j]);
			json_t *whole =
				json_pack("{s:s,s:O,s:O}", "jsonrpc", "2.0",
					  "id", id, "result", res);
			char *want = json_dumps(
				whole, JSON_COMPACT | JSON_PRESERVE_ORDER);
			size_t len = 0;
			char *got = rpc_result_text(id, results[j],
						    strlen(results[j]), &len);

			assert_non_null(got);
			if (strcmp(got, want) != 0)
				fail_msg("got %s, want %s", got, want);
			assert_int_equal(len, strlen(got));
			free(got);
			free(want);
			json_decref(whole);
			json_decref(res);
			json_decref(id);
		}
	}
}

/* result_len is honoured: the text need not be NUL-terminated there. */
static void
test_result_text_len(void **state)
{
	const char text[] = "{\"a\":1}GARBAGE";
	json_t *id = json_integer(3);
	size_t len;
	char *got;

	(void)state;
	got = rpc_result_text(id, text, 7, &len);
	assert_string_equal(got, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{"
				 "\"a\":1}}");
	assert_int_equal(len, strlen(got));
	free(got);
	json_decref(id);
}

/* rpc_result_text_with: the response of rpc_result with the member
 * spliced in last, whatever the id and the result's members. */
static void
test_result_text_with(void **state)
{
	static const struct {
		const char *id, *result, *member, *want;
	} cases[] = {
		{"7", "{\"content\":[]}", "{\"a\":[1,{\"b\":null}]}",
		 "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"content\":[],"
		 "\"sc\":{\"a\":[1,{\"b\":null}]}}}"},
		{"\"x}}\"", "{}", "[]",
		 "{\"jsonrpc\":\"2.0\",\"id\":\"x}}\",\"result\":{\"sc\":[]}}"},
		{"0", "{\"m\":{\"n\":{}}}", "1.5",
		 "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"m\":{\"n\":{}},"
		 "\"sc\":1.5}}"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *id = parse(cases[i].id);
		size_t len = 0;
		char *got = rpc_result_text_with(id, parse(cases[i].result),
						 "sc", cases[i].member,
						 strlen(cases[i].member), &len);
		json_t *back;

		assert_non_null(got);
		assert_string_equal(got, cases[i].want);
		assert_int_equal(len, strlen(got));
		back = json_loads(got, JSON_REJECT_DUPLICATES, NULL);
		assert_non_null(back);
		json_decref(back);
		free(got);
		json_decref(id);
	}
	/* no result: nothing */
	{
		json_t *id = json_integer(1);
		size_t len = 99;

		assert_null(rpc_result_text_with(id, NULL, "sc", "1", 1, &len));
		json_decref(id);
	}
}

struct id_text_case {
	const char *id; /* JSON; NULL: a NULL id */
	size_t len;
	const char *want;
};

static const struct id_text_case id_text_cases[] = {
	{"7", 32, "7"},
	{"0", 32, "0"},
	{"-9223372036854775807", 32, "-9223372036854775807"},
	{"\"abc\"", 32, "\"abc\""},
	{"\"\"", 32, "\"\""},
	{"null", 32, "null"},
	{NULL, 32, "null"},
	{"1.5", 32, "null"},
	/* truncated to fit, still NUL-terminated and quoted */
	{"\"abcdefghij\"", 8, "\"abcd\""},
	{"123456789", 5, "1234"},
	{"\"abc\"", 1, ""},
};

static void
test_id_text_table(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(id_text_cases) / sizeof(id_text_cases[0]); i++) {
		const struct id_text_case *c = &id_text_cases[i];
		json_t *id = c->id != NULL ? parse(c->id) : NULL;
		char buf[64];

		memset(buf, 'Z', sizeof(buf));
		rpc_id_text(id, buf, c->len);
		if (strcmp(buf, c->want) != 0)
			fail_msg("id %s len %zu: got %s, want %s",
				 c->id ? c->id : "NULL", c->len, buf, c->want);
		assert_true(strlen(buf) < c->len);
		json_decref(id);
	}
}

/* The 2025-03-26 batch rules every transport applies. */
static void
test_batch_rules(void **state)
{
	json_t *ok = json_loads("[{\"jsonrpc\":\"2.0\",\"id\":1,"
				"\"method\":\"ping\"}]",
				0, NULL);
	json_t *init = json_loads("[{\"jsonrpc\":\"2.0\",\"id\":1,"
				  "\"method\":\"ping\"},{\"jsonrpc\":\"2.0\","
				  "\"id\":2,\"method\":\"initialize\"}]",
				  0, NULL);
	json_t *empty = json_array(), *big = json_array();
	char why[300];

	(void)state;
	for (int i = 0; i <= RPC_BATCH_MAX; i++)
		json_array_append_new(big, json_object());
	assert_null(rpc_batch_shape(ok));
	assert_string_equal(rpc_batch_shape(empty),
			    "invalid request: an empty batch");
	assert_string_equal(rpc_batch_shape(init),
			    "invalid request: initialize cannot be part of a "
			    "batch");
	assert_string_equal(
		rpc_batch_shape(big),
		"invalid request: a batch holds at most 1000 messages");
	json_array_remove(big, 0);
	assert_null(rpc_batch_shape(big));

	assert_true(rpc_batch_allowed("2025-03-26", "POST", why, sizeof(why)));
	assert_false(rpc_batch_allowed("2025-06-18", "POST", why, sizeof(why)));
	assert_string_equal(why, "invalid request: JSON-RPC batches exist only "
				 "in revision 2025-03-26; this session uses "
				 "2025-06-18: send one message per POST");
	assert_false(rpc_batch_allowed(NULL, "line", why, sizeof(why)));
	assert_string_equal(why, "invalid request: JSON-RPC batches exist only "
				 "in revision 2025-03-26: send one message per "
				 "line");
	json_decref(ok);
	json_decref(init);
	json_decref(empty);
	json_decref(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_rules),
		cmocka_unit_test(test_classify_table),
		cmocka_unit_test(test_classify_params_array),
		cmocka_unit_test(test_result_shape),
		cmocka_unit_test(test_error_shape),
		cmocka_unit_test(test_notification_shape),
		cmocka_unit_test(test_result_text_table),
		cmocka_unit_test(test_result_text_len),
		cmocka_unit_test(test_result_text_with),
		cmocka_unit_test(test_id_text_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
