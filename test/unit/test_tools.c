/*
 * test_tools.c - unit tests for server/tools: loading the embedded tool
 * definitions against the real handler tables, enablement by config
 * (conformance fixtures on and off, tool sets, disabled tools), the
 * tools/list pages per protocol revision, cursors, tools_same, and the
 * errors for a handler without a definition and a definition without a
 * handler.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "conformance.h"
#include "tool_core.h"
#include "tool_genai.h"
#include "tool_grafana.h"
#include "tool_query.h"
#include "tool_services.h"
#include "tool_spans.h"
#include "tool_telemetry.h"
#include "tools.h"

/* Every family's table, as server.c binds them; a new family is added
 * here too, or loading fails with "no handler is bound". */
static const struct tool_handler *const tables[] = {
	core_tool_handlers,
	conformance_tool_handlers,
	query_tool_handlers,
	telemetry_tool_handlers,
	spans_tool_handlers, /* query_spans, get_trace */
	genai_tool_handlers, /* get_session, analyze_genai, compare_sessions */
	services_tool_handlers, /* list_services */
	grafana_tool_handlers,	/* query_grafana_metrics */
	NULL,
};

/* The fixture tools in listing order: definitions sorted by path. */
static const char *const fixture_names[] = {
	"json_schema_2020_12_tool",
	"test_audio_content",
	"test_cancellation",
	"test_elicitation",
	"test_elicitation_sep1034_defaults",
	"test_elicitation_sep1330_enums",
	"test_embedded_resource",
	"test_error_handling",
	"test_image_content",
	"test_input_required_result_capabilities",
	"test_input_required_result_elicitation",
	"test_input_required_result_list_roots",
	"test_input_required_result_multi_round",
	"test_input_required_result_multiple_inputs",
	"test_input_required_result_request_state",
	"test_input_required_result_sampling",
	"test_input_required_result_tampered_state",
	"test_logging_tool",
	"test_missing_capability",
	"test_multiple_content_types",
	"test_reconnection",
	"test_sampling",
	"test_simple_text",
	"test_streaming_elicitation",
	"test_tool_with_logging",
	"test_tool_with_progress",
};
#define NFIXTURES (sizeof(fixture_names) / sizeof(fixture_names[0]))

/* MCP-DIGEST B2: this inputSchema must be listed verbatim. */
static const char schema_2020_12[] =
	"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
	"\"type\":\"object\",\"$defs\":{\"address\":{\"type\":\"object\","
	"\"properties\":{\"street\":{\"type\":\"string\"},\"city\":{\"type\":"
	"\"string\"}}}},\"properties\":{\"name\":{\"type\":\"string\"},"
	"\"address\":{\"$ref\":\"#/$defs/address\"}},"
	"\"additionalProperties\":false}";

static struct config *
config_from(const char *toml)
{
	static char *const no_env[] = {NULL};
	struct config *cfg = NULL;
	struct config_error cerr;

	if (config_load_text(toml, strlen(toml), "test.toml", no_env, &cfg,
			     &cerr) != STATUS_OK)
		fail_msg("config: %s: %s", cerr.key, cerr.msg);
	return cfg;
}

static struct tools *
load(const char *toml)
{
	struct config *cfg = config_from(toml);
	struct tools *t = NULL;
	char err[512] = "";

	if (tools_load(tables, cfg, &t, err, sizeof(err)) != STATUS_OK)
		fail_msg("tools_load: %s", err);
	config_free(cfg);
	assert_non_null(t);
	return t;
}

static bool
is_fixture(const char *name)
{
	size_t i;

	for (i = 0; i < NFIXTURES; i++)
		if (strcmp(fixture_names[i], name) == 0)
			return true;
	return false;
}

/* The tools/list page as parsed JSON (new reference). */
static json_t *
page(const struct tools *t, const char *version, size_t start)
{
	size_t len = 0;
	const char *text = tools_list_json(t, version, start, &len);
	json_t *v;

	assert_non_null(text);
	assert_int_equal(strlen(text), len);
	v = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	assert_non_null(v);
	return v;
}

static const json_t *
listed(const json_t *pg, const char *name)
{
	size_t i;
	const json_t *tool;

	json_array_foreach(
		json_object_get(pg, "tools"), i,
		tool) if (strcmp(json_string_value(json_object_get(tool,
								   "name")),
				 name) == 0) return tool;
	return NULL;
}

static void
test_fixtures_enabled(void **state)
{
	struct tools *t = load("[conformance]\nenabled = true\n");
	const struct tool_def *d;
	size_t i;

	(void)state;
	assert_int_equal(tools_count(t), NFIXTURES);
	for (i = 0; i < NFIXTURES; i++) {
		d = tools_at(t, i);
		assert_non_null(d);
		assert_string_equal(d->name, fixture_names[i]);
		assert_string_equal(d->set, "conformance");
		assert_non_null(d->fn);
		assert_non_null(d->input);
		/* Fixtures carry no outputSchema (MCP-DIGEST B2). */
		assert_null(d->output);
		assert_ptr_equal(tools_find(t, d->name), d);
	}
	assert_null(tools_at(t, NFIXTURES));
	/* With the fixtures on, only they are listed and callable (G11). */
	assert_null(tools_find(t, "get_server_status"));
	assert_null(tools_find(t, "no_such_tool"));
	assert_null(tools_find(t, ""));
	assert_null(tools_find(t, "TEST_SIMPLE_TEXT")); /* case-sensitive */
	tools_unref(t);
}

static void
test_fixtures_disabled(void **state)
{
	struct tools *t = load("[conformance]\nenabled = false\n");
	const struct tool_def *d;
	size_t i;

	(void)state;
	assert_true(tools_count(t) >= 1);
	for (i = 0; i < tools_count(t); i++)
		if (is_fixture(tools_at(t, i)->name))
			fail_msg("fixture %s listed with conformance off",
				 tools_at(t, i)->name);
	for (i = 0; i < NFIXTURES; i++)
		assert_null(tools_find(t, fixture_names[i]));
	d = tools_find(t, "get_server_status");
	assert_non_null(d);
	assert_string_equal(d->set, "core");
	assert_non_null(d->output);
	tools_unref(t);
}

static void
test_disabled_and_sets(void **state)
{
	struct tools *t;
	json_t *pg;

	(void)state;
	t = load("[tools]\ndisabled = [\"test_sampling\", \"nope\"]\n"
		 "[conformance]\nenabled = true\n");
	assert_int_equal(tools_count(t), NFIXTURES - 1);
	assert_null(tools_find(t, "test_sampling"));
	assert_non_null(tools_find(t, "test_elicitation"));
	pg = page(t, "2025-11-25", 0);
	assert_null(listed(pg, "test_sampling"));
	assert_non_null(listed(pg, "test_elicitation"));
	json_decref(pg);
	tools_unref(t);

	t = load("[tools]\nenabled_sets = [\"core\"]\n");
	assert_non_null(tools_find(t, "get_server_status"));
	assert_null(tools_find(t, "test_simple_text"));
	tools_unref(t);

	/* No set enabled: an empty list, still a valid page. */
	t = load("[tools]\nenabled_sets = [\"no-such-set\"]\n");
	assert_int_equal(tools_count(t), 0);
	assert_null(tools_at(t, 0));
	pg = page(t, "2025-11-25", 0);
	assert_int_equal(json_array_size(json_object_get(pg, "tools")), 0);
	assert_null(json_object_get(pg, "nextCursor"));
	json_decref(pg);
	tools_unref(t);
}

/* What each revision's Tool carries (MCP-DIGEST 0.1, A6.2). */
/* Deprecated aliases: callable always, listed only on request. */
static void
test_deprecated_aliases(void **state)
{
	struct tools *t;
	size_t n;
	json_t *pg;

	(void)state;
	t = load("");
	n = tools_count(t);
	assert_non_null(tools_find(t, "query_metrics"));
	assert_non_null(tools_find(t, "query_beyla_http_metrics"));
	pg = page(t, "2025-11-25", 0);
	assert_null(listed(pg, "query_beyla_http_metrics"));
	assert_non_null(listed(pg, "query_ebpf_http_metrics"));
	json_decref(pg);
	tools_unref(t);

	t = load("[tools]\ndeprecated_aliases = true\n");
	assert_int_equal(tools_count(t), n + 4);
	pg = page(t, "2025-11-25", 0);
	assert_non_null(listed(pg, "query_beyla_traces"));
	json_decref(pg);
	tools_unref(t);

	/* disabled by name, or the query set off: gone */
	t = load("[tools]\ndisabled = [\"query_beyla_traces\"]\n");
	assert_null(tools_find(t, "query_beyla_traces"));
	assert_non_null(tools_find(t, "query_beyla_sql_metrics"));
	tools_unref(t);
	t = load("[tools]\nenabled_sets = [\"core\"]\n");
	assert_null(tools_find(t, "query_beyla_sql_metrics"));
	tools_unref(t);
}

static void
test_list_per_revision(void **state)
{
	static const struct {
		const char *version;
		bool annotations, title;
	} revs[] = {
		{"2024-11-05", false, false},
		{"2025-03-26", true, false},
		{"2025-06-18", true, true},
		{"2025-11-25", true, true},
	};
	struct tools *t = load("[conformance]\nenabled = true\n");
	size_t r, i;

	(void)state;
	for (r = 0; r < sizeof(revs) / sizeof(revs[0]); r++) {
		json_t *pg = page(t, revs[r].version, 0);
		const json_t *arr = json_object_get(pg, "tools"), *tool;

		assert_int_equal(json_object_size(pg), 1); /* no nextCursor */
		assert_int_equal(json_array_size(arr), NFIXTURES);
		json_array_foreach(arr, i, tool)
		{
			const json_t *in = json_object_get(tool, "inputSchema");

			assert_string_equal(json_string_value(json_object_get(
						    tool, "name")),
					    fixture_names[i]);
			assert_true(json_string_length(json_object_get(
					    tool, "description")) > 0);
			assert_string_equal(
				json_string_value(json_object_get(in, "type")),
				"object");
			if ((json_object_get(tool, "annotations") != NULL) !=
			    revs[r].annotations)
				fail_msg("%s %s: annotations", revs[r].version,
					 fixture_names[i]);
			if (!revs[r].title &&
			    json_object_get(tool, "title") != NULL)
				fail_msg("%s %s: title", revs[r].version,
					 fixture_names[i]);
		}
		if (revs[r].title)
			assert_string_equal(
				json_string_value(json_object_get(
					listed(pg, "test_simple_text"),
					"title")),
				"Simple Text");
		json_decref(pg);
	}
	tools_unref(t);
}

static void
test_schema_2020_12_verbatim(void **state)
{
	static const char *const versions[] = {"2024-11-05", "2025-06-18",
					       "2025-11-25"};
	struct tools *t = load("[conformance]\nenabled = true\n");
	json_t *want = json_loads(schema_2020_12, 0, NULL);
	size_t i, len;

	(void)state;
	assert_non_null(want);
	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		json_t *pg = page(t, versions[i], 0);
		const json_t *in = json_object_get(
			listed(pg, "json_schema_2020_12_tool"), "inputSchema");

		assert_non_null(in);
		if (!json_equal(in, want))
			fail_msg("%s: inputSchema changed", versions[i]);
		assert_true(json_is_false(
			json_object_get(in, "additionalProperties")));
		json_decref(pg);
	}
	assert_non_null(strstr(tools_list_json(t, "2025-11-25", 0, &len),
			       "\"$ref\":\"#/$defs/address\""));
	json_decref(want);
	tools_unref(t);
}

/* An unknown revision string gets the newest shapes. */
static void
test_list_unknown_version(void **state)
{
	struct tools *t = load("[conformance]\nenabled = true\n");
	size_t a, b;
	const char *newest = tools_list_json(t, "2025-11-25", 0, &a);
	const char *other = tools_list_json(t, "1999-01-01", 0, &b);

	(void)state;
	assert_ptr_equal(other, newest);
	assert_int_equal(a, b);
	tools_unref(t);
}

static void
test_list_cursor_offsets(void **state)
{
	/* The default page (server.list_page_size 100) holds every fixture:
	 * only offset 0 exists. */
	static const size_t bad[] = {1, 50, 99, 100, 200, (size_t)-1};
	struct tools *t = load("[conformance]\nenabled = true\n");
	size_t i, len = 12345;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (tools_list_json(t, "2025-11-25", bad[i], &len) != NULL)
			fail_msg("offset %zu accepted", bad[i]);
	assert_non_null(tools_list_json(t, "2025-11-25", 0, &len));
	tools_unref(t);
}

/* Small pages: following nextCursor visits every tool once, in order,
 * and only the offsets the cursors name are pages. */
static void
test_list_pages(void **state)
{
	struct tools *t = load("[server]\nlist_page_size = 4\n"
			       "[conformance]\nenabled = true\n");
	size_t start = 0, seen = 0, pages = 0, len, i;

	(void)state;
	for (;;) {
		json_t *pg = page(t, "2025-11-25", start);
		const json_t *arr = json_object_get(pg, "tools"), *tool;
		const char *next =
			json_string_value(json_object_get(pg, "nextCursor"));
		char want[32];

		assert_true(json_array_size(arr) >= 1);
		assert_true(json_array_size(arr) <= 4);
		json_array_foreach(arr, i, tool) assert_string_equal(
			json_string_value(json_object_get(tool, "name")),
			fixture_names[seen + i]);
		seen += json_array_size(arr);
		pages++;
		if (next == NULL) {
			json_decref(pg);
			break;
		}
		snprintf(want, sizeof(want), "p%zu", start + 4);
		assert_string_equal(next, want);
		start += 4;
		json_decref(pg);
	}
	assert_int_equal(seen, NFIXTURES);
	assert_int_equal(pages, (NFIXTURES + 3) / 4);
	assert_null(tools_list_json(t, "2025-11-25", 2, &len));
	assert_null(tools_list_json(t, "2025-11-25", 17, &len));
	assert_null(tools_list_json(t, "2025-11-25", 25, &len));
	assert_null(tools_list_json(t, "2025-11-25", 4 * ((NFIXTURES + 3) / 4),
				    &len));
	assert_non_null(tools_list_json(t, "2024-11-05", 12, &len));
	assert_non_null(tools_list_json(t, "2026-07-28", 24, &len));
	tools_unref(t);
}

static void
test_same(void **state)
{
	const char *on = "[conformance]\nenabled = true\n";
	struct tools *a = load(on), *b = load(on);
	struct tools *off = load("[conformance]\nenabled = false\n");
	struct tools *less = load("[tools]\ndisabled = [\"test_sampling\"]\n"
				  "[conformance]\nenabled = true\n");
	struct tools *other = load("[tools]\ndisabled = "
				   "[\"test_simple_text\"]\n"
				   "[conformance]\nenabled = true\n");

	(void)state;
	assert_true(tools_same(a, b));
	assert_true(tools_same(a, a));
	assert_false(tools_same(a, off));
	assert_false(tools_same(a, less));
	assert_false(tools_same(less, a));
	assert_false(tools_same(less, other)); /* same size, other names */
	tools_unref(a);
	tools_unref(b);
	tools_unref(off);
	tools_unref(less);
	tools_unref(other);
}

static void
test_refcount(void **state)
{
	struct tools *t = load("[conformance]\nenabled = true\n");

	(void)state;
	tools_ref(t);
	tools_unref(t);
	/* Still alive after one unref of two. */
	assert_int_equal(tools_count(t), NFIXTURES);
	tools_unref(t);
	tools_unref(NULL);
}

static int
dummy_handler(struct call *call, const json_t *args, json_t **result)
{
	(void)call;
	(void)args;
	*result = NULL;
	return STATUS_OK;
}

static const struct tool_handler extra_handlers[] = {
	{"no_such_tool", dummy_handler},
	{NULL, NULL},
};

static void
test_handler_without_definition(void **state)
{
	const struct tool_handler *const with_extra[] = {
		core_tool_handlers,	conformance_tool_handlers,
		query_tool_handlers,	telemetry_tool_handlers,
		spans_tool_handlers,	/* query_spans, get_trace */
		genai_tool_handlers,	/* get_session, ... */
		services_tool_handlers, /* list_services */
		grafana_tool_handlers,	/* query_grafana_metrics */
		extra_handlers,		NULL};
	struct config *cfg = config_from("[conformance]\nenabled = true\n");
	struct tools *t = (struct tools *)1;
	char err[512] = "";

	(void)state;
	assert_int_equal(tools_load(with_extra, cfg, &t, err, sizeof(err)),
			 STATUS_INVALID);
	assert_null(t);
	if (strstr(err, "\"no_such_tool\"") == NULL ||
	    strstr(err, "no definition") == NULL)
		fail_msg("message does not name the handler: %s", err);
	config_free(cfg);
}

static void
test_definition_without_handler(void **state)
{
	const struct tool_handler *const only_fixtures[] = {
		conformance_tool_handlers, NULL};
	struct config *cfg = config_from("[conformance]\nenabled = true\n");
	struct tools *t = (struct tools *)1;
	char err[512] = "";

	(void)state;
	/* get_server_status (core) has a definition but no handler here,
	 * even though it would not be enabled: every definition is bound. */
	assert_int_equal(tools_load(only_fixtures, cfg, &t, err, sizeof(err)),
			 STATUS_INVALID);
	assert_null(t);
	if (strstr(err, "get_server_status") == NULL ||
	    strstr(err, "no handler") == NULL)
		fail_msg("message does not name the tool: %s", err);
	config_free(cfg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_enabled),
		cmocka_unit_test(test_fixtures_disabled),
		cmocka_unit_test(test_disabled_and_sets),
		cmocka_unit_test(test_deprecated_aliases),
		cmocka_unit_test(test_list_per_revision),
		cmocka_unit_test(test_schema_2020_12_verbatim),
		cmocka_unit_test(test_list_unknown_version),
		cmocka_unit_test(test_list_cursor_offsets),
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_same),
		cmocka_unit_test(test_refcount),
		cmocka_unit_test(test_handler_without_definition),
		cmocka_unit_test(test_definition_without_handler),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
