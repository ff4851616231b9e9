/*
 * test_reqmeta.c - unit tests for server/mcp/reqmeta (the per-request _meta of
 * MCP 2026-07-28: the claim, every refusal with the key it names, the
 * optional fields, capability paths) and for the request-scoped sessions
 * of session_create_request (stateless, log level, counter ids, gone from
 * their table once released with an idle timeout of 0).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/reqmeta.h"
#include "base/clock.h"
#include "mcp/session.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static json_t *
parse(const char *text)
{
	json_error_t e;
	json_t *j = json_loads(text, 0, &e);

	if (j == NULL)
		fail_msg("bad test JSON %s: %s", text, e.text);
	return j;
}

#define V "\"io.modelcontextprotocol/protocolVersion\""
#define C "\"io.modelcontextprotocol/clientCapabilities\""
#define I "\"io.modelcontextprotocol/clientInfo\""
#define L "\"io.modelcontextprotocol/logLevel\""

static void
test_claim(void **state)
{
	static const struct {
		const char *msg;
		bool claim;
	} cases[] = {
		{"{\"method\":\"tools/list\"}", false},
		{"{\"method\":\"tools/list\",\"params\":{}}", false},
		{"{\"method\":\"x\",\"params\":{\"_meta\":{}}}", false},
		{"{\"method\":\"x\",\"params\":{\"_meta\":{\"progressToken\":1}"
		 "}}",
		 false},
		{"{\"method\":\"x\",\"params\":{\"_meta\":{" V
		 ":\"2026-07-28\"}}}",
		 true},
		/* any value is a claim: the version check answers it */
		{"{\"method\":\"x\",\"params\":{\"_meta\":{" V ":\"v999\"}}}",
		 true},
		{"{\"method\":\"x\",\"params\":{\"_meta\":{" V ":7}}}", true},
		{"{\"method\":\"x\",\"params\":[1]}", false},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		json_t *m = parse(cases[i].msg);

		if (reqmeta_has_claim(m) != cases[i].claim)
			fail_msg("case %zu: %s", i, cases[i].msg);
		json_decref(m);
	}
	assert_true(reqmeta_version_supported("2026-07-28"));
	assert_false(reqmeta_version_supported("2025-11-25"));
	assert_false(reqmeta_version_supported("v999.0.0"));
	assert_false(reqmeta_version_supported(NULL));
}

static void
test_parse(void **state)
{
	static const struct {
		const char *meta;   /* the _meta object, or NULL: no _meta */
		const char *needle; /* in why; NULL: accepted */
	} cases[] = {
		{NULL, "params._meta is required"},
		{"[]", "params._meta is required"},
		{"{}", "protocolVersion\"] is required"},
		{"{" V ":1," C ":{}}", "protocolVersion\"] is required"},
		{"{" V ":\"2026-07-28\"}", "clientCapabilities\"] is required"},
		{"{" V ":\"2026-07-28\"," C ":[]}",
		 "clientCapabilities\"] is required"},
		{"{" V ":\"2026-07-28\"," C ":{}," I ":\"me\"}",
		 "clientInfo\"] must be an object"},
		{"{" V ":\"2026-07-28\"," C ":{}," L ":\"loud\"}",
		 "logLevel\"] must be one of"},
		{"{" V ":\"2026-07-28\"," C ":{}," L ":3}",
		 "logLevel\"] must be one of"},
		{"{" V ":\"2026-07-28\"," C ":{}}", NULL},
		/* an unsupported version parses: the transport answers -32022 */
		{"{" V ":\"v999.0.0\"," C ":{\"sampling\":{}}," I
		 ":{\"name\":\"c\",\"version\":\"1\"}," L ":\"warning\"}",
		 NULL},
	};
	char why[512], msg[1024];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct reqmeta m;
		json_t *j;
		int rc;

		snprintf(msg, sizeof(msg),
			 "{\"method\":\"tools/list\",\"params\":{%s%s}}",
			 cases[i].meta ? "\"_meta\":" : "",
			 cases[i].meta ? cases[i].meta : "");
		j = parse(msg);
		why[0] = '\0';
		rc = reqmeta_parse(j, &m, why, sizeof(why));
		if (cases[i].needle == NULL) {
			if (rc != STATUS_OK)
				fail_msg("case %zu refused: %s", i, why);
		} else if (rc != STATUS_INVALID ||
			   strstr(why, cases[i].needle) == NULL) {
			fail_msg("case %zu: rc %d, why \"%s\", want \"%s\"", i,
				 rc, why, cases[i].needle);
		}
		json_decref(j);
	}
}

static void
test_fields(void **state)
{
	json_t *j = parse("{\"method\":\"x\",\"params\":{\"_meta\":{" V
			  ":\"2026-07-28\"," C
			  ":{\"sampling\":{},\"roots\":true,\"extensions\":{"
			  "\"io.modelcontextprotocol/tasks\":{}}}," I
			  ":{\"name\":\"c\"}," L ":\"error\"}}}");
	struct reqmeta m;
	char why[256];

	(void)state;
	assert_int_equal(reqmeta_parse(j, &m, why, sizeof(why)), STATUS_OK);
	assert_string_equal(m.version, "2026-07-28");
	assert_int_equal(m.log_level, MCP_LEVEL_ERROR);
	assert_string_equal(
		json_string_value(json_object_get(m.client_info, "name")), "c");
	assert_true(reqmeta_has_capability(m.caps, "sampling"));
	assert_false(reqmeta_has_capability(m.caps, "roots")); /* not {} */
	assert_false(reqmeta_has_capability(m.caps, "elicitation"));
	assert_true(reqmeta_has_capability(
		m.caps, "extensions/io.modelcontextprotocol/tasks"));
	assert_false(reqmeta_has_capability(m.caps, "extensions/other"));
	json_decref(j);
	/* no logLevel: no log notifications at all */
	j = parse("{\"method\":\"x\",\"params\":{\"_meta\":{" V
		  ":\"2026-07-28\"," C ":{}}}}");
	assert_int_equal(reqmeta_parse(j, &m, why, sizeof(why)), STATUS_OK);
	assert_int_equal(m.log_level, MCP_LEVEL_OFF);
	assert_null(m.client_info);
	assert_true(mcp_level_parse("emergency") < MCP_LEVEL_OFF);
	json_decref(j);
}

static void
test_request_sessions(void **state)
{
	const struct session_limits lim = {
		.max_sessions = 2,
		.idle_timeout_s = 0,
		.max_streams = 2,
		.replay_events = 8,
		.replay_bytes = 1 << 16,
		.retry_ms = 1000,
		.keepalive_s = 15,
	};
	struct session_table *t = NULL;
	struct session *a = NULL, *b = NULL, *c = NULL, *x = NULL;
	json_t *caps = parse("{\"sampling\":{}}");
	char ida[SESSION_ID_LEN + 1];

	(void)state;
	assert_int_equal(session_table_new(&lim, &t), STATUS_OK);
	assert_int_equal(session_create_request(t, "2026-07-28", caps, NULL,
						MCP_LEVEL_OFF, &a),
			 STATUS_OK);
	assert_int_equal(session_create_request(t, "2026-07-28", NULL, NULL,
						MCP_LEVEL_DEBUG, &b),
			 STATUS_OK);
	assert_true(a->stateless);
	assert_true(a->initialized);
	assert_int_equal(a->log_level, MCP_LEVEL_OFF);
	assert_int_equal(b->log_level, MCP_LEVEL_DEBUG);
	assert_string_equal(a->version, "2026-07-28");
	assert_true(json_equal(a->client_caps, caps));
	assert_string_not_equal(a->id, b->id);
	assert_int_equal(a->id[0], 'r');
	/* bounded like any table */
	assert_int_equal(session_create_request(t, "2026-07-28", NULL, NULL,
						MCP_LEVEL_OFF, &c),
			 STATUS_FULL);
	assert_null(c);
	/* busy while the request holds it; gone at the first sweep after */
	memcpy(ida, a->id, sizeof(ida));
	session_table_sweep(t, clock_mono_ms() + 1000);
	assert_int_equal(session_table_count(t), 2);
	session_release(a);
	session_table_sweep(t, clock_mono_ms() + 1000);
	assert_int_equal(session_table_count(t), 1);
	assert_int_equal(session_acquire(t, ida, &x), STATUS_NOTFOUND);
	session_release(b);
	session_table_free(t);
	json_decref(caps);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_claim),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_request_sessions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
