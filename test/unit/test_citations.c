/*
 * test_citations.c - unit tests for server/tools/tool_mesh_ui: Kiali's
 * keyword score (the id weighted x2, once; each other keyword once), the
 * ranking and its cut at three, the domain filter, the embedded index
 * (every entry whole, Sextant's links naming files that exist, the
 * curated topics and what they answer), and get_action_ui's actions for
 * each resource type with and without [links].
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>
#include <curl/curl.h>
#include <jansson.h>

#include "tools/tool_mesh_ui.h"

static const struct citation fixture[] = {
	{"istio", "traffic-shifting", "https://x/ts", "Traffic shifting",
	 "canary, weight, weights, traffic split", "b"},
	{"istio", "mtls-migration", "https://x/mtls", "Mutual TLS",
	 "mtls, strict, permissive", "b"},
	{"kiali", "health-config", "https://x/health", "Health",
	 "health, tolerance, canary", "b"},
	{"kiali", "graph-empty", "https://x/graph", "Empty graph",
	 "graph empty, no traffic", "b"},
	{"opentelemetry", "sampling", "https://x/sampling", "Sampling",
	 "sampling, canary", "b"},
};
#define NFIX (sizeof(fixture) / sizeof(fixture[0]))

/* The score of fixture entry i for a comma-separated query, through
 * mesh_ui_find's own parsing (the entry alone as the index). */
static int
score_of(size_t i, const char *query)
{
	const struct citation *out[CITATIONS_TOP];
	int score[CITATIONS_TOP];

	return mesh_ui_find(&fixture[i], 1, query, NULL, out, score,
			    CITATIONS_TOP) == 1
		       ? score[0]
		       : 0;
}

static void
test_score(void **state)
{
	static const struct {
		size_t entry;
		const char *query;
		int want;
	} cases[] = {
		{0, "traffic shifting", 2}, /* the id, '-' read as ' ' */
		{0, "traffic", 2},	    /* a part of the id */
		{0, "istio traffic shifting task", 2}, /* the id inside */
		{0, "traffic, shifting", 2}, /* the id counts once, and
						    keywords that matched it
						    count no more */
		{0, "canary", 1},	     /* a keyword */
		{0, "weight", 1},	     /* once, though two match */
		{0, "can", 1},		     /* inside a keyword */
		{0, "canary rollout", 1},    /* a keyword inside it */
		{0, "traffic, canary, weight", 4},
		{0, "Canary ,  WEIGHT ", 2}, /* case and spaces */
		{0, "mtls", 0},
		{1, "mtls, strict, permissive", 2 + 1 + 1}, /* mtls: the id */
		{3, "no traffic", 1},
		{3, "graph", 2},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got = score_of(cases[i].entry, cases[i].query);

		if (got != cases[i].want)
			fail_msg("%s on \"%s\": %d, want %d",
				 fixture[cases[i].entry].id, cases[i].query,
				 got, cases[i].want);
	}
}

static void
test_rank(void **state)
{
	const struct citation *out[CITATIONS_TOP];
	int score[CITATIONS_TOP];
	size_t n;

	(void)state;
	/* "canary" matches three entries' keywords and "traffic" one's
	 * ("no traffic"), 1 each, and traffic-shifting's id (2): that one
	 * first, then the others by title, cut at three (Sampling) */
	n = mesh_ui_find(fixture, NFIX, "canary, traffic", NULL, out, score,
			 CITATIONS_TOP);
	assert_int_equal(n, 3);
	assert_string_equal(out[0]->id, "traffic-shifting");
	assert_int_equal(score[0], 3);
	assert_string_equal(out[1]->title, "Empty graph");
	assert_string_equal(out[2]->title, "Health");
	assert_int_equal(score[1], 1);
	/* three at most, whatever max says */
	n = mesh_ui_find(fixture, NFIX, "canary, traffic", "all", out, score,
			 99);
	assert_int_equal(n, 3);
	/* the domain filter */
	n = mesh_ui_find(fixture, NFIX, "canary", "kiali", out, score,
			 CITATIONS_TOP);
	assert_int_equal(n, 1);
	assert_string_equal(out[0]->id, "health-config");
	n = mesh_ui_find(fixture, NFIX, "canary", "sextant", out, NULL,
			 CITATIONS_TOP);
	assert_int_equal(n, 0);
	/* no keyword at all */
	assert_int_equal(mesh_ui_find(fixture, NFIX, " , ,", NULL, out, score,
				      CITATIONS_TOP),
			 0);
	assert_int_equal(mesh_ui_find(fixture, NFIX, "", NULL, out, score, 3),
			 0);
	/* past 16 keywords the rest are not read */
	assert_int_equal(mesh_ui_find(fixture, NFIX,
				      "a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,"
				      "a12,a13,a14,a15,a16,mtls",
				      NULL, out, score, 3),
			 0);
	assert_int_equal(mesh_ui_find(fixture, NFIX,
				      "a1,a2,a3,a4,a5,a6,a7,a8,a9,a10,a11,"
				      "a12,a13,a14,a15,mtls",
				      NULL, out, score, 3),
			 1);
}

static void
test_index_whole(void **state)
{
	size_t curated = 0, own = 0;

	(void)state;
	for (size_t i = 0; i < mesh_ui_citations_count; i++) {
		const struct citation *c = &mesh_ui_citations[i];

		assert_true(c->domain[0] && c->id[0] && c->link[0] &&
			    c->title[0] && c->body[0]);
		assert_true(strlen(c->body) <= 900 + 4);
		if (strcmp(c->domain, "sextant") == 0) {
			char path[256];
			struct stat st;

			own++;
			snprintf(path, sizeof(path), "%.*s",
				 (int)strcspn(c->link, "#"), c->link);
			if (stat(path, &st) != 0)
				fail_msg("%s: no file %s", c->id, path);
			assert_non_null(strchr(c->link, '#'));
		} else {
			curated++;
			assert_true(strcmp(c->domain, "opentelemetry") == 0 ||
				    strcmp(c->domain, "istio") == 0 ||
				    strcmp(c->domain, "kiali") == 0);
			assert_true(strncmp(c->link, "https://", 8) == 0);
			assert_true(c->keywords[0] != '\0');
		}
	}
	assert_true(curated >= 30);
	assert_true(own >= 40);
}

static void
test_index_answers(void **state)
{
	static const struct {
		const char *query, *domain, *first;
	} cases[] = {
		{"mtls, strict", "istio", "mtls-migration"},
		{"canary, traffic split", "all", "traffic-shifting"},
		{"otlp, endpoint", "opentelemetry", "otlp-exporter"},
		{"circuit breaker, 503", NULL, "circuit-breaking"},
		{"graph empty", "kiali", "graph-empty"},
		{"traceparent", NULL, "context-propagation"},
		{"gen ai, tokens", NULL, "gen-ai"},
		{"the map", "sextant", "the-map"},
	};
	const struct citation *out[CITATIONS_TOP];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n =
			mesh_ui_find(mesh_ui_citations, mesh_ui_citations_count,
				     cases[i].query, cases[i].domain, out, NULL,
				     CITATIONS_TOP);

		if (n == 0 || strcmp(out[0]->id, cases[i].first) != 0)
			fail_msg("\"%s\": %s first, want %s", cases[i].query,
				 n > 0 ? out[0]->id : "none", cases[i].first);
	}
}

/* ---- get_action_ui ------------------------------------------------------ */

static const struct mesh_links no_links = {NULL, NULL, NULL, NULL};
static const struct mesh_links all_links = {
	"https://grafana.example.com/", "tempo-uid",
	"https://kiali.example.com/kiali/", "https://jaeger.example.com"};

/* The actions for the JSON arguments, as "target payload" lines. */
static char *
actions(const struct mesh_links *l, const char *argjson, char **errors)
{
	json_t *args = json_loads(argjson, 0, NULL), *sc = NULL, *a;
	char err[512], *out;
	size_t i, len = 0, cap = 8192;

	assert_non_null(args);
	assert_int_equal(mesh_ui_actions(l, args, &sc, err, sizeof(err)),
			 STATUS_OK);
	out = calloc(1, cap);
	assert_non_null(out);
	json_array_foreach(json_object_get(sc, "actions"), i, a)
	{
		assert_string_equal(
			json_string_value(json_object_get(a, "kind")),
			"navigation");
		assert_non_null(json_string_value(json_object_get(a, "title")));
		len += (size_t)snprintf(
			out + len, cap - len, "%s%s %s", len > 0 ? "\n" : "",
			json_string_value(json_object_get(a, "target")),
			json_string_value(json_object_get(a, "payload")));
		assert_true(len < cap);
	}
	if (errors != NULL) {
		const char *e =
			json_string_value(json_object_get(sc, "errors"));

		*errors = e != NULL ? strdup(e) : NULL;
	}
	json_decref(sc);
	json_decref(args);
	return out;
}

/* Grafana's URL, checked by test_grafana_explore, as "grafana GRAFANA". */
static void
mask_grafana(char *s)
{
	char *g = strstr(s, "grafana https://");
	size_t end;

	if (g == NULL)
		return;
	end = strcspn(g, "\n");
	memcpy(g + 8, "GRAFANA", 7);
	memmove(g + 15, g + end, strlen(g + end) + 1);
}

static void
test_actions_table(void **state)
{
	static const struct {
		bool links;
		const char *args, *want;
	} cases[] = {
		{false, "{\"resourceType\": \"overview\"}",
		 "sextant /ui/\nsextant /readyz\nsextant /metrics"},
		{false,
		 "{\"resourceType\": \"service\", \"resourceName\": \"a\"}",
		 "sextant /ui/services/a"},
		{false, "{\"resourceType\": \"service\"}", ""},
		{true, "{\"resourceType\": \"overview\"}",
		 "sextant /ui/\nsextant /readyz\nsextant /metrics\n"
		 "kiali https://kiali.example.com/kiali/console/overview"},
		{true,
		 "{\"resourceType\": \"service\", \"resourceName\": "
		 "\"reviews\", \"namespaces\": \" bookinfo \", \"tab\": "
		 "\"in_metrics\"}",
		 "sextant /ui/services/reviews\n"
		 "kiali https://kiali.example.com/kiali/console/namespaces/"
		 "bookinfo/services/reviews?tab=metrics\n"
		 "grafana GRAFANA\n"
		 "jaeger https://jaeger.example.com/search?service=reviews"},
		{true,
		 "{\"resourceType\": \"workload\", \"resourceName\": "
		 "\"reviews-v1\", \"namespaces\": \"bookinfo\", \"tab\": "
		 "\"envoy\", \"clusterName\": \"east\"}",
		 "sextant /ui/?filter=reviews-v1\n"
		 "kiali https://kiali.example.com/kiali/console/namespaces/"
		 "bookinfo/workloads/reviews-v1?tab=envoy&clusterName=east\n"
		 "grafana GRAFANA"},
		{true,
		 "{\"resourceType\": \"app\", \"resourceName\": \"reviews "
		 "v2\", "
		 "\"namespaces\": \"bookinfo\", \"tab\": \"envoy\"}",
		 "sextant /ui/services/reviews%20v2\n"
		 "kiali https://kiali.example.com/kiali/console/namespaces/"
		 "bookinfo/applications/reviews%20v2?tab=info\n"
		 "grafana GRAFANA\n"
		 "jaeger "
		 "https://jaeger.example.com/search?service=reviews%20v2"},
		{true,
		 "{\"resourceType\": \"service\", \"namespaces\": \"all\"}",
		 "kiali https://kiali.example.com/kiali/console/services"},
		{true,
		 "{\"resourceType\": \"workload\", \"namespaces\": \"a,b\"}",
		 "kiali https://kiali.example.com/kiali/console/workloads?"
		 "namespaces=a,b"},
		{true,
		 "{\"resourceType\": \"graph\", \"namespaces\": \"a, b\", "
		 "\"graphType\": \"app\", \"clusterName\": \"east\", "
		 "\"resourceName\": \"ignored\"}",
		 "sextant /ui/graph\n"
		 "kiali https://kiali.example.com/kiali/console/graph/"
		 "namespaces?namespaces=a,b&graphType=app&clusterName=east"},
		{true, "{\"resourceType\": \"graph\", \"graph\": \"mesh\"}",
		 "sextant /ui/graph\n"
		 "kiali https://kiali.example.com/kiali/console/mesh"},
		{true, "{\"resourceType\": \"graph\"}",
		 "sextant /ui/graph\n"
		 "kiali https://kiali.example.com/kiali/console/graph/"
		 "namespaces?graphType=versionedApp"},
		{true,
		 "{\"resourceType\": \"istio\", \"namespaces\": \"bookinfo\"}",
		 "kiali https://kiali.example.com/kiali/console/istio?"
		 "namespaces=bookinfo"},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = actions(cases[i].links ? &all_links : &no_links,
				    cases[i].args, NULL);

		mask_grafana(got);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("%s:\n%s\nwant:\n%s", cases[i].args, got,
				 cases[i].want);
		free(got);
	}
}

static void
test_grafana_explore(void **state)
{
	const char *prefix = "grafana https://grafana.example.com/explore?"
			     "schemaVersion=1&panes=";
	struct mesh_links nouid = all_links;
	char *got, *dec, *g;
	json_t *panes, *q;
	int len;

	(void)state;
	got = actions(&all_links,
		      "{\"resourceType\": \"service\", \"resourceName\": "
		      "\"check \\\"out\\\"\", \"namespaces\": \"shop\"}",
		      NULL);
	g = strstr(got, prefix);
	assert_non_null(g);
	g += strlen(prefix);
	g[strcspn(g, "\n")] = '\0';
	assert_null(strpbrk(g, "{}\" ")); /* all of it percent-encoded */
	dec = curl_easy_unescape(NULL, g, 0, &len);
	panes = json_loads(dec, 0, NULL);
	assert_non_null(panes);
	q = json_array_get(
		json_object_get(json_object_get(panes, "sextant"), "queries"),
		0);
	assert_string_equal(json_string_value(json_object_get(q, "query")),
			    "{resource.service.name=\"check \\\"out\\\"\"}");
	assert_string_equal(json_string_value(json_object_get(q, "queryType")),
			    "traceql");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(q, "datasource"), "uid")),
			    "tempo-uid");
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(json_object_get(panes, "sextant"),
					"range"),
			"from")),
		"now-1h");
	json_decref(panes);
	curl_free(dec);
	free(got);
	/* a workload by its deployment; no data source: Grafana's default */
	nouid.grafana_datasource = "";
	got = actions(&nouid,
		      "{\"resourceType\": \"workload\", \"resourceName\": "
		      "\"reviews-v1\", \"namespaces\": \"shop\"}",
		      NULL);
	g = strstr(got, prefix) + strlen(prefix);
	g[strcspn(g, "\n")] = '\0';
	dec = curl_easy_unescape(NULL, g, 0, &len);
	panes = json_loads(dec, 0, NULL);
	q = json_array_get(
		json_object_get(json_object_get(panes, "sextant"), "queries"),
		0);
	assert_string_equal(json_string_value(json_object_get(q, "query")),
			    "{resource.k8s.deployment.name=\"reviews-v1\"}");
	assert_null(json_object_get(q, "datasource"));
	json_decref(panes);
	curl_free(dec);
	free(got);
}

static void
test_actions_refused(void **state)
{
	static const char *const bad[] = {
		"{\"resourceType\": \"service\", \"namespaces\": "
		"\"Book_Info\"}",
		"{\"resourceType\": \"service\", \"namespaces\": \"-a\"}",
		"{\"resourceType\": \"graph\", \"namespaces\": \"a,b/../c\"}",
		"{\"namespaces\": \"a\"}",
	};
	char err[512], *errors = NULL, *got;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		json_t *args = json_loads(bad[i], 0, NULL), *sc = NULL;

		assert_int_equal(mesh_ui_actions(&all_links, args, &sc, err,
						 sizeof(err)),
				 STATUS_INVALID);
		assert_null(sc);
		assert_true(strstr(err, "namespaces:") == err ||
			    strstr(err, "resourceType:") == err);
		json_decref(args);
	}
	/* details need one namespace: Kiali's link is left out, said so */
	got = actions(&all_links,
		      "{\"resourceType\": \"service\", \"resourceName\": "
		      "\"reviews\", \"namespaces\": \"a,b\"}",
		      &errors);
	assert_null(strstr(got, "kiali "));
	assert_non_null(strstr(got, "jaeger "));
	assert_non_null(errors);
	assert_non_null(strstr(errors, "exactly one namespace"));
	free(errors);
	free(got);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_score),
		cmocka_unit_test(test_rank),
		cmocka_unit_test(test_index_whole),
		cmocka_unit_test(test_index_answers),
		cmocka_unit_test(test_actions_table),
		cmocka_unit_test(test_grafana_explore),
		cmocka_unit_test(test_actions_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
