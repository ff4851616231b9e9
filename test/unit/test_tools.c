/*
 * test_tools.c - unit tests for server/tools: loading the embedded tool
 * definitions against the real handler tables, enablement by config
 * (conformance fixtures on and off, tool sets, disabled tools), the
 * tools/list pages per protocol revision, cursors, tools_same, and the
 * errors for a handler without a definition and a definition without a
 * handler; and the helpers of tool_common (time ranges, the source
 * table, the answer's byte budget: tool_bound and tool_rows_cut).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/timerange.h"
#include "conf/config.h"
#include "conformance/conformance.h"
#include "json/jsondump.h"
#include "conformance/tool_conformance_2026.h"
#include "mcp/tools.h"
#include "telemetry/merge.h"
#include "tools/tool_common.h"
#include "boot/boot.h"
#include "tools/tool_core.h"
#include "tools/tool_genai.h"
#include "tools/tool_grafana.h"
#include "tools/tool_mesh_ui.h"
#include "tools/tool_mesh_istio.h"
#include "tools/tool_mesh_graph.h"
#include "tools/tool_query.h"
#include "tools/tool_spans_services.h"
#include "tools/tool_spans.h"
#include "tools/tool_query_otlp.h"

/* The fixture tools in listing order: definitions sorted by path. */
static const char *const fixture_names[] = {
	"confirm_delete",
	"failing_job",
	"greet",
	"json_schema_2020_12_tool",
	"multi_input",
	"protocol_error_job",
	"slow_compute",
	"test_audio_content",
	"test_cancellation",
	"test_custom_header",
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
	"test_tool_with_task",
	"test_trigger_tool_change",
};
#define NFIXTURES (sizeof(fixture_names) / sizeof(fixture_names[0]))

/* MCP-DIGEST B2: this inputSchema must be listed verbatim; it is the one
 * conformance 0.2.0-alpha.12 gives (SEP-2106: $anchor, allOf/anyOf,
 * if/then/else), a superset of what 0.1.16 checks. */
static const char schema_2020_12[] =
	"{\"$schema\":\"https://json-schema.org/draft/2020-12/schema\","
	"\"type\":\"object\",\"$defs\":{\"address\":{\"$anchor\":"
	"\"addressDef\",\"type\":\"object\",\"properties\":{\"street\":{"
	"\"type\":\"string\"},\"city\":{\"type\":\"string\"}}}},"
	"\"properties\":{\"name\":{\"type\":\"string\"},\"address\":{"
	"\"$ref\":\"#/$defs/address\"},\"contactMethod\":{\"type\":"
	"\"string\",\"enum\":[\"phone\",\"email\"]},\"phone\":{\"type\":"
	"\"string\"},\"email\":{\"type\":\"string\"}},\"allOf\":[{"
	"\"anyOf\":[{\"required\":[\"phone\"]},{\"required\":[\"email\"]}]"
	"}],\"if\":{\"properties\":{\"contactMethod\":{\"const\":\"phone\"}"
	"},\"required\":[\"contactMethod\"]},\"then\":{\"required\":"
	"[\"phone\"]},\"else\":{\"required\":[\"email\"]},"
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

	if (tools_load(boot_tool_families, cfg, &t, err, sizeof(err)) !=
	    STATUS_OK)
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

/* [auth.oauth] write_tools, by name or set: a read-only caller's pages
 * leave those tools out and page on their own; the rest see them all. */
static void
test_write_tools_read_only(void **state)
{
	struct tools *t;
	const char *text;
	json_t *pg;
	size_t len = 0, n_all = 0, n_ro = 0, start;

	(void)state;
	t = load("[conformance]\nenabled = true\n[server]\nlist_page_size = "
		 "4\n[auth.oauth]\nwrite_tools = [\"test_sampling\", "
		 "\"core\"]\n");
	assert_true(tools_find(t, "test_sampling")->write);
	assert_false(tools_find(t, "test_elicitation")->write);
	for (start = 0;; start += 4) {
		text = tools_list_json_for(t, "2025-11-25", false, true, start,
					   &len);
		if (text == NULL)
			break;
		pg = json_loadb(text, len, 0, NULL);
		assert_non_null(pg);
		assert_null(listed(pg, "test_sampling"));
		n_ro += json_array_size(json_object_get(pg, "tools"));
		json_decref(pg);
	}
	for (start = 0; tools_list_json_for(t, "2025-11-25", false, false,
					    start, &len) != NULL;
	     start += 4)
		n_all += len > 0;
	assert_int_equal(n_ro, tools_count(t) - 1);
	assert_true(n_all * 4 >= tools_count(t));
	pg = page(t, "2025-11-25", 0); /* full access: unchanged */
	assert_int_equal(json_array_size(json_object_get(pg, "tools")), 4);
	json_decref(pg);
	tools_unref(t);

	/* no write tool listed: read-only callers get the same pages */
	t = load("[conformance]\nenabled = true\n");
	assert_ptr_equal(
		tools_list_json_for(t, "2025-11-25", true, true, 0, &len),
		tools_list_json_ui(t, "2025-11-25", true, 0, &len));
	tools_unref(t);
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

/* Whether the registry built from toml lists name (2025-11-25 page) and
 * can call it: the two must agree for a listed set. */
static bool
listed_with(const char *toml, const char *name)
{
	struct tools *t = load(toml);
	json_t *pg = page(t, "2025-11-25", 0);
	bool on = listed(pg, name) != NULL;

	assert_true(on == (tools_find(t, name) != NULL));
	json_decref(pg);
	tools_unref(t);
	return on;
}

/*
 * The default sets: everything but the eBPF plumbing, the Kiali UI helpers
 * and, without a Kubernetes API, manage_istio_config; each is listed once
 * named, and manage_istio_config by default with [kubernetes] api_url or
 * in a pod.
 */
static void
test_default_sets(void **state)
{
	static const char *const off[] = {
		"query_ebpf_http_metrics", "query_ebpf_traces", "get_citations",
		"get_action_ui", "manage_istio_config"};
	static const char named[] =
		"[tools]\nenabled_sets = [\"ebpf\", \"kiali\", \"istio\"]\n";
	static const char kube[] =
		"[kubernetes]\napi_url = \"https://127.0.0.1:6443\"\n";

	(void)state;
	unsetenv("KUBERNETES_SERVICE_HOST");
	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		assert_false(listed_with("", off[i]));
		assert_true(listed_with(named, off[i]));
	}
	assert_true(listed_with("", "query_metrics"));
	assert_true(listed_with("", "get_mesh_graph"));
	assert_false(listed_with(named, "query_metrics"));
	assert_true(listed_with(kube, "manage_istio_config"));
	assert_false(listed_with(kube, "get_citations"));
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	assert_true(listed_with("", "manage_istio_config"));
	unsetenv("KUBERNETES_SERVICE_HOST");
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

	/* A production tool's annotations.title, the same as its title: for
	 * 2025-03-26 clients only (later ones read the top-level title). */
	t = load("");
	for (r = 1; r < sizeof(revs) / sizeof(revs[0]); r++) {
		json_t *pg = page(t, revs[r].version, 0);
		const json_t *tool = listed(pg, "query_traces");
		const json_t *a = json_object_get(tool, "annotations");

		assert_non_null(a);
		assert_true(json_is_true(json_object_get(a, "readOnlyHint")));
		if (revs[r].title) {
			assert_null(json_object_get(a, "title"));
			assert_string_equal(json_string_value(json_object_get(
						    tool, "title")),
					    "Traces from every span source");
		} else {
			assert_string_equal(
				json_string_value(json_object_get(a, "title")),
				"Traces from every span source");
		}
		json_decref(pg);
	}
	tools_unref(t);
}

static void
test_schema_2020_12_verbatim(void **state)
{
	static const char *const versions[] = {"2024-11-05", "2025-06-18",
					       "2025-11-25", "2026-07-28"};
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
	assert_null(tools_list_json(t, "2025-11-25", 33, &len));
	assert_null(tools_list_json(t, "2025-11-25", 36, &len));
	assert_null(tools_list_json(t, "2025-11-25", 4 * ((NFIXTURES + 3) / 4),
				    &len));
	assert_non_null(tools_list_json(t, "2024-11-05", 12, &len));
	assert_non_null(tools_list_json(t, "2026-07-28", 32, &len));
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

/* ---- x-mcp-header (SEP-2243) ----------------------------------------- */

/* The fixture's annotated parameters, indexed at load; no other fixture
 * has any. */
static void
test_headers_fixture(void **state)
{
	static const struct {
		const char *header, *arg;
		size_t depth;
		enum tool_header_type type;
	} want[] = {
		{"Mcp-Param-Region", "region", 1, TOOL_HEADER_STRING},
		{"Mcp-Param-Count", "count", 1, TOOL_HEADER_INTEGER},
		{"Mcp-Param-Verbose", "verbose", 1, TOOL_HEADER_BOOLEAN},
		{"Mcp-Param-Zone", "target.zone", 2, TOOL_HEADER_STRING},
	};
	struct tools *t = load("[conformance]\nenabled = true\n");
	const struct tool_def *d = tools_find(t, "test_custom_header");
	size_t i;

	(void)state;
	assert_non_null(d);
	assert_int_equal(d->nheaders, 4);
	for (i = 0; i < 4; i++) {
		assert_string_equal(d->headers[i].header, want[i].header);
		assert_string_equal(d->headers[i].arg, want[i].arg);
		assert_int_equal(d->headers[i].depth, want[i].depth);
		assert_int_equal(d->headers[i].type, want[i].type);
	}
	assert_string_equal(d->headers[3].path[0], "target");
	assert_string_equal(d->headers[3].path[1], "zone");
	for (i = 0; i < tools_count(t); i++)
		if (tools_at(t, i) != d && tools_at(t, i)->nheaders != 0)
			fail_msg("%s has x-mcp-header parameters",
				 tools_at(t, i)->name);
	tools_unref(t);
}

/* want_n >= 0: indexed, that many; else err is a substring of the
 * message, which starts with the schema location. */
struct hcase {
	const char *schema;
	int want_n;
	const char *err;
};

#define PROP(p) "{\"type\":\"object\",\"properties\":{" p "}}"

static const struct hcase hcases[] = {
	{PROP("\"region\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}"),
	 1, NULL},
	{PROP("\"a\":{\"type\":\"object\",\"properties\":{\"b\":{\"type\":"
	      "\"integer\",\"x-mcp-header\":\"B\"}}}"),
	 1, NULL},
	{PROP("\"t\":{\"type\":\"boolean\",\"x-mcp-header\":"
	      "\"A!#$%&'*+-.^_`|~9\"}"),
	 1, NULL},
	{PROP("\"x-mcp-header\":{\"type\":\"string\"}"), 0, NULL},
	/* default, const and examples hold data, not schemas */
	{PROP("\"a\":{\"type\":\"object\",\"default\":{\"x-mcp-header\":"
	      "\"D\"},\"examples\":[{\"x-mcp-header\":\"E\"}]}"),
	 0, NULL},
	{"{\"type\":\"object\"}", 0, NULL},
	/* the value: a non-empty token */
	{PROP("\"v\":{\"type\":\"string\",\"x-mcp-header\":\"\"}"), -1,
	 "#/properties/v: \"x-mcp-header\" must be a non-empty header name"},
	{PROP("\"v\":{\"type\":\"string\",\"x-mcp-header\":\"My Region\"}"), -1,
	 "RFC 9110 token), got \"My Region\""},
	{PROP("\"v\":{\"type\":\"string\",\"x-mcp-header\":"
	      "\"Region:Primary\"}"),
	 -1, "got \"Region:Primary\""},
	{PROP("\"v\":{\"type\":\"string\",\"x-mcp-header\":\"R\u00e9gion\"}"),
	 -1, "RFC 9110 token"},
	{PROP("\"v\":{\"type\":\"string\",\"x-mcp-header\":\"Region\\t1\"}"),
	 -1, "RFC 9110 token"},
	{PROP("\"v\":{\"type\":\"string\",\"x-mcp-header\":5}"), -1,
	 "got a non-string"},
	/* primitive types only, one of them */
	{PROP("\"score\":{\"type\":\"number\",\"x-mcp-header\":\"Score\"}"), -1,
	 "#/properties/score: \"x-mcp-header\" \"Score\" needs a property "
	 "of \"type\" \"string\", \"integer\" or \"boolean\""},
	{PROP("\"d\":{\"type\":\"object\",\"x-mcp-header\":\"Data\"}"), -1,
	 "got \"object\""},
	{PROP("\"i\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
	      "\"x-mcp-header\":\"Items\"}"),
	 -1, "got \"array\""},
	{PROP("\"n\":{\"type\":\"null\",\"x-mcp-header\":\"Nil\"}"), -1,
	 "got \"null\""},
	{PROP("\"n\":{\"type\":[\"string\",\"null\"],\"x-mcp-header\":"
	      "\"N\"}"),
	 -1, "got no single type"},
	{PROP("\"n\":{\"x-mcp-header\":\"N\"}"), -1, "got no single type"},
	/* unique ignoring case */
	{PROP("\"field1\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"},"
	      "\"field2\":{\"type\":\"string\",\"x-mcp-header\":\"Region\"}"),
	 -1,
	 "#/properties/field2: \"x-mcp-header\" \"Region\" is already used "
	 "by property \"field1\""},
	{PROP("\"a\":{\"type\":\"object\",\"properties\":{\"f\":{\"type\":"
	      "\"string\",\"x-mcp-header\":\"MyField\"}}},\"g\":{\"type\":"
	      "\"integer\",\"x-mcp-header\":\"myfield\"}"),
	 -1, "\"myfield\" is already used by property \"a.f\""},
	/* reached through properties alone */
	{"{\"type\":\"string\",\"x-mcp-header\":\"Root\"}", -1,
	 "#: \"x-mcp-header\" is allowed only on a property reached from the "
	 "root through \"properties\" alone"},
	{PROP("\"l\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
	      "\"x-mcp-header\":\"Item\"}}"),
	 -1, "#/properties/l/items: \"x-mcp-header\" is allowed only"},
	{"{\"type\":\"object\",\"anyOf\":[{\"properties\":{\"a\":{\"type\":"
	 "\"string\",\"x-mcp-header\":\"A\"}}}]}",
	 -1, "#/anyOf/0/properties/a: \"x-mcp-header\" is allowed only"},
	{"{\"type\":\"object\",\"allOf\":[{\"properties\":{\"a\":{\"type\":"
	 "\"string\",\"x-mcp-header\":\"A\"}}}]}",
	 -1, "#/allOf/0/properties/a:"},
	{"{\"type\":\"object\",\"oneOf\":[true,{\"properties\":{\"a\":{"
	 "\"type\":\"string\",\"x-mcp-header\":\"A\"}}}]}",
	 -1, "#/oneOf/1/properties/a:"},
	{"{\"type\":\"object\",\"not\":{\"properties\":{\"a\":{\"type\":"
	 "\"string\",\"x-mcp-header\":\"A\"}}}}",
	 -1, "#/not/properties/a:"},
	{"{\"type\":\"object\",\"if\":{\"properties\":{\"a\":{\"type\":"
	 "\"string\",\"x-mcp-header\":\"A\"}}}}",
	 -1, "#/if/properties/a:"},
	{"{\"type\":\"object\",\"if\":true,\"then\":{\"properties\":{\"a\":"
	 "{\"type\":\"string\",\"x-mcp-header\":\"A\"}}}}",
	 -1, "#/then/properties/a:"},
	{"{\"type\":\"object\",\"else\":{\"properties\":{\"a\":{\"type\":"
	 "\"string\",\"x-mcp-header\":\"A\"}}}}",
	 -1, "#/else/properties/a:"},
	{"{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\","
	 "\"x-mcp-header\":\"A\"}}",
	 -1, "#/additionalProperties:"},
	{"{\"type\":\"object\",\"$defs\":{\"r/x\":{\"type\":\"string\","
	 "\"x-mcp-header\":\"R\"}},\"properties\":{\"r\":{\"$ref\":"
	 "\"#/$defs/r~1x\"}}}",
	 -1, "#/$defs/r~1x: \"x-mcp-header\" is allowed only"},
	{"{\"type\":\"object\",\"definitions\":{\"r\":{\"type\":\"string\","
	 "\"x-mcp-header\":\"R\"}}}",
	 -1, "#/definitions/r:"},
};

static void
test_headers_index(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(hcases) / sizeof(hcases[0]); i++) {
		const struct hcase *c = &hcases[i];
		json_t *schema = json_loads(c->schema, 0, NULL);
		struct tool_header *h = (struct tool_header *)1;
		size_t n = 99;
		char err[600] = "";
		int rc;

		if (schema == NULL)
			fail_msg("case %zu: bad test JSON %s", i, c->schema);
		rc = tools_headers_index(schema, &h, &n, err, sizeof(err));
		if (c->want_n >= 0 &&
		    (rc != STATUS_OK || n != (size_t)c->want_n))
			fail_msg("case %zu: %s: rc %d n %zu, want %d: %s", i,
				 c->schema, rc, n, c->want_n, err);
		if (c->want_n < 0 &&
		    (rc != STATUS_INVALID || strstr(err, c->err) == NULL))
			fail_msg("case %zu: %s: rc %d '%s', want '%s'", i,
				 c->schema, rc, err, c->err);
		if (rc != STATUS_OK || n == 0)
			assert_null(h);
		if (rc != STATUS_OK)
			assert_int_equal(n, 0);
		if (c->want_n == 1 && strstr(c->schema, "\"a\"") != NULL) {
			assert_string_equal(h[0].arg, "a.b");
			assert_string_equal(h[0].header, "Mcp-Param-B");
			assert_int_equal(h[0].type, TOOL_HEADER_INTEGER);
		}
		tools_headers_free(h, n);
		json_decref(schema);
	}
	tools_headers_free(NULL, 0);
}

/* The value a header mirrors: absent or null means none. */
static void
test_header_arg(void **state)
{
	static const struct {
		const char *args, *want; /* want NULL: no value */
	} cases[] = {
		{"{\"t\":{\"zone\":\"eu\"}}", "\"eu\""},
		{"{\"t\":{\"zone\":0}}", "0"},
		{"{\"t\":{\"zone\":false}}", "false"},
		{"{\"t\":{\"zone\":null}}", NULL},
		{"{\"t\":{}}", NULL},
		{"{\"t\":null}", NULL},
		{"{\"t\":\"zone\"}", NULL},
		{"{\"t\":[{\"zone\":\"eu\"}]}", NULL},
		{"{}", NULL},
		{"[]", NULL},
	};
	const char *path[] = {"t", "zone"};
	struct tool_header h = {.header = "Mcp-Param-Zone",
				.arg = "t.zone",
				.path = path,
				.depth = 2,
				.type = TOOL_HEADER_STRING};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *args = json_loads(cases[i].args, 0, NULL);
		json_t *want = cases[i].want ? json_loads(cases[i].want,
							  JSON_DECODE_ANY, NULL)
					     : NULL;
		const json_t *got = tools_header_arg(&h, args);

		assert_non_null(args);
		if (want == NULL ? got != NULL : !json_equal(got, want))
			fail_msg("%s: wrong value", cases[i].args);
		json_decref(want);
		json_decref(args);
	}
}

/* Header text (decoded) against the body value, per declared type. */
static void
test_header_matches(void **state)
{
	static const struct {
		enum tool_header_type type;
		const char *value; /* JSON */
		const char *text;
		bool want;
	} cases[] = {
		{TOOL_HEADER_STRING, "\"Hello\"", "Hello", true},
		{TOOL_HEADER_STRING, "\"Hello\"", "hello", false},
		{TOOL_HEADER_STRING, "\"Hello\"", "Hello ", false},
		{TOOL_HEADER_STRING, "\"\"", "", true},
		{TOOL_HEADER_STRING, "\"SGVsbG8=\"", "SGVsbG8=", true},
		{TOOL_HEADER_STRING, "\"Hello, \u4e16\u754c\"",
		 "Hello, \xe4\xb8\x96\xe7\x95\x8c", true},
		{TOOL_HEADER_STRING, "\"a\\u0000b\"", "a", false},
		{TOOL_HEADER_STRING, "5", "5", false},
		{TOOL_HEADER_STRING, "true", "true", false},
		{TOOL_HEADER_INTEGER, "42", "42", true},
		{TOOL_HEADER_INTEGER, "42", "42.0", true},
		{TOOL_HEADER_INTEGER, "42", "4.2e1", true},
		{TOOL_HEADER_INTEGER, "42", "+42", true},
		{TOOL_HEADER_INTEGER, "-7", "-7", true},
		{TOOL_HEADER_INTEGER, "42.0", "42", true},
		{TOOL_HEADER_INTEGER, "42", "43", false},
		{TOOL_HEADER_INTEGER, "42", "0x2A", false},
		{TOOL_HEADER_INTEGER, "42", "42abc", false},
		{TOOL_HEADER_INTEGER, "42", " 42", false},
		{TOOL_HEADER_INTEGER, "42", "", false},
		{TOOL_HEADER_INTEGER, "0", "-", false},
		{TOOL_HEADER_INTEGER, "42", "inf", false},
		{TOOL_HEADER_INTEGER, "42", "1e400", false},
		{TOOL_HEADER_INTEGER, "9007199254740993", "9007199254740992",
		 false},
		{TOOL_HEADER_INTEGER, "9007199254740993", "9007199254740993",
		 true},
		{TOOL_HEADER_INTEGER, "\"42\"", "42", false},
		{TOOL_HEADER_INTEGER, "true", "1", false},
		{TOOL_HEADER_BOOLEAN, "true", "true", true},
		{TOOL_HEADER_BOOLEAN, "false", "false", true},
		{TOOL_HEADER_BOOLEAN, "true", "True", false},
		{TOOL_HEADER_BOOLEAN, "true", "1", false},
		{TOOL_HEADER_BOOLEAN, "false", "true", false},
		{TOOL_HEADER_BOOLEAN, "\"true\"", "true", false},
		{TOOL_HEADER_BOOLEAN, "0", "false", false},
	};
	const char *path[] = {"p"};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tool_header h = {.header = "Mcp-Param-P",
					.arg = "p",
					.path = path,
					.depth = 1,
					.type = cases[i].type};
		json_t *v = json_loads(cases[i].value,
				       JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

		assert_non_null(v);
		if (tools_header_matches(&h, v, cases[i].text) != cases[i].want)
			fail_msg("case %zu: %s vs \"%s\": want %s", i,
				 cases[i].value, cases[i].text,
				 cases[i].want ? "a match" : "no match");
		json_decref(v);
	}
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
	const struct tool_handler *with_extra[32];
	size_t k = 0;
	struct config *cfg = config_from("[conformance]\nenabled = true\n");
	struct tools *t = (struct tools *)1;
	char err[512] = "";

	(void)state;
	while (boot_tool_families[k] != NULL &&
	       k + 2 < sizeof(with_extra) / sizeof(with_extra[0])) {
		with_extra[k] = boot_tool_families[k];
		k++;
	}
	with_extra[k++] = extra_handlers;
	with_extra[k] = NULL;
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
		conformance_tool_handlers, conformance_2026_tool_handlers,
		NULL};
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

/* 2026-11-21T10:00:00Z */
#define NOW_MS	1795255200000LL
#define HOUR_MS (3600LL * 1000)

static void
test_time_range(void **state)
{
	static const struct {
		const char *args; /* JSON */
		const char *dflt;
		unsigned flags;
		int rc;
		int64_t span_ms; /* to_ms - from_ms when rc is STATUS_OK */
		bool to_now;	 /* to_ms == NOW_MS */
		const char *err; /* in the message when rc is not */
	} cases[] = {
		{"{}", "1h", 0, STATUS_OK, HOUR_MS, true, NULL},
		{"{}", "24h", TOOL_RANGE_FROM_TO, STATUS_OK, 24 * HOUR_MS, true,
		 NULL},
		{"{\"time_range\": \"15m\"}", "1h", 0, STATUS_OK,
		 15 * 60 * 1000, true, NULL},
		/* empty: the default, unless refused */
		{"{\"time_range\": \"\"}", "7d", 0, STATUS_OK, 168 * HOUR_MS,
		 true, NULL},
		{"{\"time_range\": \"\"}", "1h", TOOL_RANGE_EMPTY_REFUSED,
		 STATUS_INVALID, 0, false, "time_range \"\""},
		{"{\"time_range\": \"soon\"}", "1h", 0, STATUS_INVALID, 0,
		 false, "time_range \"soon\""},
		/* from / to only when asked for, and then over time_range */
		{"{\"time_range\": \"15m\", \"from\": "
		 "\"2026-11-21T08:00:00Z\"}",
		 "1h", 0, STATUS_OK, 15 * 60 * 1000, true, NULL},
		{"{\"time_range\": \"15m\", \"from\": "
		 "\"2026-11-21T08:00:00Z\"}",
		 "1h", TOOL_RANGE_FROM_TO, STATUS_OK, 2 * HOUR_MS, true, NULL},
		{"{\"from\": \"2026-11-21T08:00:00Z\", \"to\": "
		 "\"2026-11-21T09:00:00Z\"}",
		 "1h", TOOL_RANGE_FROM_TO | TOOL_RANGE_EMPTY_REFUSED, STATUS_OK,
		 HOUR_MS, false, NULL},
		{"{\"to\": \"2026-11-21T09:00:00Z\"}", "1h", TOOL_RANGE_FROM_TO,
		 STATUS_INVALID, 0, false, "without from"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *args = json_loads(cases[i].args, 0, NULL);
		struct timerange tr;
		char err[512];
		int rc;

		assert_non_null(args);
		rc = tool_time_range(args, cases[i].dflt, cases[i].flags,
				     NOW_MS, &tr, err, sizeof(err));
		if (rc != cases[i].rc)
			fail_msg("case %zu (%s): status %d, want %d: %s", i,
				 cases[i].args, rc, cases[i].rc, err);
		if (rc == STATUS_OK) {
			assert_int_equal(tr.to_ms - tr.from_ms,
					 cases[i].span_ms);
			assert_int_equal(tr.to_ms == NOW_MS, cases[i].to_now);
		} else if (strstr(err, cases[i].err) == NULL) {
			fail_msg("case %zu: \"%s\" not in: %s", i, cases[i].err,
				 err);
		}
		json_decref(args);
	}
}

static void
test_time_range_given(void **state)
{
	static const struct {
		const char *args;
		bool given;
	} cases[] = {
		{"{}", false},
		{"{\"time_range\": \"\", \"from\": \"\"}", false},
		{"{\"time_range\": 5}", false},
		{"{\"time_range\": \"1h\"}", true},
		{"{\"from\": \"2026-11-21\"}", true},
		{"{\"to\": \"2026-11-21\"}", true},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *args = json_loads(cases[i].args, 0, NULL);

		assert_non_null(args);
		if (tool_time_range_given(args) != cases[i].given)
			fail_msg("case %zu (%s): want %d", i, cases[i].args,
				 cases[i].given);
		json_decref(args);
	}
}

static void
test_sources(void **state)
{
	(void)state;
	for (int i = 0; i < TOOL_SRCS; i++)
		assert_int_equal(tool_source_of_merge(tool_sources[i].merge),
				 i);
	for (int i = 0; i < TOOL_SPAN_SRCS; i++)
		assert_int_equal(tool_span_source(tool_sources[i].name), i);
	assert_int_equal(tool_span_source("prometheus"), -1);
	assert_int_equal(tool_span_source("beyla"), -1);
	assert_string_equal(
		tool_sources[tool_source_of_merge(MERGE_SOURCE_EBPF)].name,
		"ebpf");
}

/* The length of v as compact JSON, as tool_bound counts it. */
static size_t
dumped_len(const json_t *v)
{
	char *text = jsondump(v, JSON_COMPACT);
	size_t len;

	assert_non_null(text);
	len = strlen(text);
	free(text);
	return len;
}

/* {"id": "<i, padded to width>"}: rows of one size, told apart */
static json_t *
row_of(size_t i, int width)
{
	char id[256];

	snprintf(id, sizeof(id), "%0*zu", width, i);
	return json_pack("{s:s}", "id", id);
}

/* A result: the text, and {"<key>": n rows of width, ...} per array. */
static json_t *
bound_result(const char *text, const char *const *keys, const size_t *n,
	     const int *width, size_t arrays)
{
	json_t *sc = json_pack("{s:b, s:I}", "more_spans", 0, "total",
			       (json_int_t)1000);

	for (size_t k = 0; k < arrays; k++) {
		json_t *a = json_array();

		for (size_t i = 0; i < n[k]; i++)
			json_array_append_new(a, row_of(i, width[k]));
		json_object_set_new(sc, keys[k], a);
	}
	return tool_result_new(
		json_pack("[{s:s, s:s}]", "type", "text", "text", text), sc,
		false);
}

/* tool_put_line: control bytes as spaces, a cut at a character boundary
 * with "…", and past the buffer's maximum never half a character. */
static void
test_put_line(void **state)
{
	static const struct {
		const char *in;
		size_t max;
		const char *want;
	} cases[] = {
		{"GET /a", 200, "GET /a"},
		{"a\tb\nc\x7f", 200, "a b c "},
		{"abcdef", 6, "abcdef"},
		{"abcdef", 4, "abcd…"},
		{"ab\xc3\xa9"
		 "cd",
		 3, "ab…"}, /* é would straddle the cut */
		{"ab\xc3\xa9"
		 "cd",
		 4, "ab\xc3\xa9…"},
		{"\xe2\x82\xac", 2, "…"},
		{"", 5, ""},
	};
	struct buf b;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_init(&b, 1024);
		assert_int_equal(tool_put_line(&b, cases[i].in, cases[i].max),
				 STATUS_OK);
		assert_int_equal(buf_puts(&b, ""), STATUS_OK);
		if (b.len != strlen(cases[i].want) ||
		    memcmp(b.data, cases[i].want, b.len) != 0)
			fail_msg("case %zu: \"%.*s\"", i, (int)b.len, b.data);
		buf_free(&b);
	}
	/* room for "ab ", then one byte of "éz": what came before is kept,
	 * the run that did not fit is left out whole (not half of é), and
	 * tool_fit takes appends again */
	buf_init(&b, 4);
	assert_int_equal(tool_put_line(&b, "ab\t\xc3\xa9z", 200), STATUS_LIMIT);
	assert_int_equal(b.len, 3);
	assert_memory_equal(b.data, "ab ", 3);
	assert_int_equal(tool_fit(&b), STATUS_LIMIT);
	assert_int_equal(buf_puts(&b, "!"), STATUS_OK);
	assert_memory_equal(b.data, "ab !", 4);
	buf_free(&b);
}

static void
test_rows_cut(void **state)
{
	const size_t a[] = {100, 100, 100}, b[] = {30, 30};
	const size_t *sizes[] = {a, b}, count[] = {3, 2};
	size_t keep[2];

	/* the largest list (by bytes kept) loses its last row, then
	 * again; nothing to go; more than there is */
	static const struct {
		size_t need, went, keep0, keep1;
	} cases[] = {{150, 200, 1, 2},
		     {260, 300, 0, 2},
		     {330, 330, 0, 1},
		     {0, 0, 3, 2},
		     {10000, 360, 0, 0}};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t went =
			tool_rows_cut(cases[i].need, sizes, count, keep, 2);

		if (went != cases[i].went || keep[0] != cases[i].keep0 ||
		    keep[1] != cases[i].keep1)
			fail_msg("need %zu: went %zu, kept %zu and %zu",
				 cases[i].need, went, keep[0], keep[1]);
	}
}

static void
test_bound_under_budget(void **state)
{
	const char *keys[] = {"spans"};
	const size_t n[] = {40};
	const int width[] = {20};
	json_t *res = bound_result("40 spans", keys, n, width, 1);
	json_t *copy = json_deep_copy(res);
	struct tool_rows rows[] = {{"spans", "more_spans", "spans", 0, 9, 9}};

	(void)state;
	/* exactly at the budget: untouched */
	assert_int_equal(tool_bound(res, dumped_len(res), rows, 1, "narrow it"),
			 STATUS_OK);
	assert_true(json_equal(res, copy));
	assert_int_equal(rows[0].shown, 40);
	assert_int_equal(rows[0].cut, 0);
	/* an error result is not cut */
	json_object_set_new(res, "isError", json_true());
	assert_int_equal(tool_bound(res, 100, rows, 1, "narrow it"), STATUS_OK);
	json_object_del(res, "isError");
	assert_true(json_equal(res, copy));
	json_decref(copy);
	json_decref(res);
}

static void
test_bound_cut(void **state)
{
	const char *keys[] = {"spans"};
	const size_t n[] = {100};
	const int width[] = {50};
	const char *hint = "narrow time_range or lower limit";
	json_t *res = bound_result("100 spans of 1000", keys, n, width, 1);
	struct tool_rows rows[] = {
		{"spans", "more_spans", "spans", 1000, 0, 0}};
	size_t full = dumped_len(res), budget = 4096, row, need, cut;
	json_t *sc, *a;
	const char *text;
	char want[200];

	(void)state;
	row = dumped_len(json_array_get(
		      json_object_get(json_object_get(res, "structuredContent"),
				      "spans"),
		      0)) +
	      1; /* with its comma */
	assert_true(full > budget);
	assert_int_equal(tool_bound(res, budget, rows, 1, hint), STATUS_OK);
	/* exactly the rows that make room for the note and the fields */
	need = full - budget + 160 + strlen(hint) + 96 + strlen("spans");
	cut = (need + row - 1) / row;
	assert_int_equal(rows[0].cut, cut);
	assert_int_equal(rows[0].shown, 100 - cut);
	assert_true(dumped_len(res) <= budget);
	sc = json_object_get(res, "structuredContent");
	a = json_object_get(sc, "spans");
	assert_int_equal(json_array_size(a), 100 - cut);
	/* the first rows, whole */
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *r = row_of(i, 50);

		assert_true(json_equal(json_array_get(a, i), r));
		json_decref(r);
	}
	assert_true(json_is_true(json_object_get(sc, "more_spans")));
	assert_null(json_object_get(sc, "truncated"));
	text = json_string_value(json_object_get(
		json_array_get(json_object_get(res, "content"), 0), "text"));
	snprintf(want, sizeof(want),
		 "100 spans of 1000\n(structured content: %zu spans shown, "
		 "%zu more: %s;",
		 100 - cut, 1000 - (100 - cut), hint);
	assert_non_null(text);
	if (strncmp(text, want, strlen(want)) != 0)
		fail_msg("text %s, want it to begin %s", text, want);
	assert_non_null(strstr(text, "at most 4096 bytes"));
	json_decref(res);
}

static void
test_bound_largest_first(void **state)
{
	const char *keys[] = {"big", "small"};
	const size_t n[] = {30, 30};
	const int width[] = {200, 10};
	json_t *res = bound_result("", keys, n, width, 2);
	struct tool_rows rows[] = {{"big", NULL, "big rows", 0, 0, 0},
				   {"small", NULL, "small rows", 0, 0, 0}};
	json_t *sc = json_object_get(res, "structuredContent");
	const char *text;

	(void)state;
	assert_int_equal(tool_bound(res, 4096, rows, 2, "ask for less"),
			 STATUS_OK);
	assert_true(dumped_len(res) <= 4096);
	/* the small list is untouched while the big one is bigger */
	assert_int_equal(rows[1].cut, 0);
	assert_int_equal(json_array_size(json_object_get(sc, "small")), 30);
	assert_true(rows[0].cut > 0);
	assert_int_equal(rows[0].shown + rows[0].cut, 30);
	/* no "more" of its own: "truncated" says how many went */
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(sc, "truncated"), "big")),
			 (json_int_t)rows[0].cut);
	assert_null(json_object_get(json_object_get(sc, "truncated"), "small"));
	text = json_string_value(json_object_get(
		json_array_get(json_object_get(res, "content"), 0), "text"));
	assert_non_null(text);
	assert_int_equal(strncmp(text, "(structured content: ", 21), 0);
	assert_non_null(strstr(text, " big rows shown, "));
	assert_null(strstr(text, "small rows"));
	json_decref(res);
}

static void
test_bound_count(void **state)
{
	const char *keys[] = {"services"};
	const size_t n[] = {60};
	const int width[] = {100};
	json_t *res = bound_result("60 services", keys, n, width, 1);
	/* bound_result's "total" (1000) stands for a "not_shown" count */
	struct tool_rows rows[] = {{"services", "total", "services", 0, 0, 0}};
	json_t *sc = json_object_get(res, "structuredContent");

	(void)state;
	assert_int_equal(tool_bound(res, 4096, rows, 1, "lower limit"),
			 STATUS_OK);
	assert_true(rows[0].cut > 0);
	assert_int_equal(json_array_size(json_object_get(sc, "services")),
			 rows[0].shown);
	/* a count gets the rows dropped added; no "truncated" then */
	assert_int_equal(json_integer_value(json_object_get(sc, "total")),
			 (json_int_t)(1000 + rows[0].cut));
	assert_null(json_object_get(sc, "truncated"));
	json_decref(res);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixtures_enabled),
		cmocka_unit_test(test_write_tools_read_only),
		cmocka_unit_test(test_fixtures_disabled),
		cmocka_unit_test(test_disabled_and_sets),
		cmocka_unit_test(test_default_sets),
		cmocka_unit_test(test_deprecated_aliases),
		cmocka_unit_test(test_list_per_revision),
		cmocka_unit_test(test_schema_2020_12_verbatim),
		cmocka_unit_test(test_list_unknown_version),
		cmocka_unit_test(test_list_cursor_offsets),
		cmocka_unit_test(test_list_pages),
		cmocka_unit_test(test_same),
		cmocka_unit_test(test_refcount),
		cmocka_unit_test(test_headers_fixture),
		cmocka_unit_test(test_headers_index),
		cmocka_unit_test(test_header_arg),
		cmocka_unit_test(test_header_matches),
		cmocka_unit_test(test_handler_without_definition),
		cmocka_unit_test(test_definition_without_handler),
		cmocka_unit_test(test_time_range),
		cmocka_unit_test(test_time_range_given),
		cmocka_unit_test(test_sources),
		cmocka_unit_test(test_put_line),
		cmocka_unit_test(test_rows_cut),
		cmocka_unit_test(test_bound_under_budget),
		cmocka_unit_test(test_bound_cut),
		cmocka_unit_test(test_bound_largest_first),
		cmocka_unit_test(test_bound_count),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
