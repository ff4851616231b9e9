/*
 * tool_mesh_ui.c - set "kiali": the mesh tools for people and UIs, after Kiali's
 * AI tools (kiali/kiali ai/mcp: get_referenced_docs, get_action_ui):
 * get_citations searches the documentation index embedded at build time
 * (scripts/gen-citations.sh) with Kiali's keyword score; get_action_ui
 * answers navigation actions, computed from the arguments and [links]
 * alone (no store, no remote call).
 */
#include "tools/tool_mesh_ui.h"

#include <ctype.h>
#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "conf/config.h"
#include "tools/tool.h"
#include "tools/tool_common.h"

/* ---- get_citations ------------------------------------------------------ */

/* Equal, or one contains the other: Kiali's match of two keywords. */
static bool
related(const char *a, const char *b)
{
	return strstr(a, b) != NULL || strstr(b, a) != NULL;
}

/* s[0..n) lowercased, spaces around it trimmed, into out (cut to fit). */
static void
lower_trim(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;

	while (n > 0 && isspace((unsigned char)*s))
		s++, n--;
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	for (size_t i = 0; i < n && k + 1 < cap; i++)
		out[k++] = (char)tolower((unsigned char)s[i]);
	out[k] = '\0';
}

int
mesh_ui_score(const struct citation *c, char kw[][CITATIONS_KEYWORD_MAX],
	      size_t n)
{
	char id[128], dk[128];
	bool id_matched = false;
	int score = 0;

	lower_trim(c->id, strlen(c->id), id, sizeof(id));
	for (char *p = id; *p; p++)
		if (*p == '-')
			*p = ' ';
	for (size_t i = 0; i < n && !id_matched; i++)
		if (related(kw[i], id)) {
			score += 2;
			id_matched = true;
		}
	for (size_t i = 0; i < n; i++) {
		const char *k = c->keywords;
		bool hit = false;

		if (id_matched && related(kw[i], id))
			continue;
		while (!hit && *k) {
			size_t len = strcspn(k, ",");

			lower_trim(k, len, dk, sizeof(dk));
			hit = dk[0] != '\0' && related(kw[i], dk);
			k += len + (k[len] == ',');
		}
		if (hit || related(kw[i], id))
			score++;
	}
	return score;
}

/* Whether a ranks before b: higher score, then title. */
static bool
ranks_before(int sa, const struct citation *a, int sb, const struct citation *b)
{
	return sa != sb ? sa > sb : strcmp(a->title, b->title) < 0;
}

size_t
mesh_ui_find(const struct citation *idx, size_t n, const char *keywords,
	     const char *domain, const struct citation **out, int *scores,
	     size_t max)
{
	char kw[CITATIONS_MAX_KEYWORDS][CITATIONS_KEYWORD_MAX];
	int sc[CITATIONS_TOP];
	size_t nkw = 0, got = 0;

	if (max > CITATIONS_TOP)
		max = CITATIONS_TOP;
	for (const char *k = keywords; *k && nkw < CITATIONS_MAX_KEYWORDS;) {
		size_t len = strcspn(k, ",");

		lower_trim(k, len, kw[nkw], sizeof(kw[nkw]));
		if (kw[nkw][0] != '\0')
			nkw++;
		k += len + (k[len] == ',');
	}
	if (nkw == 0)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct citation *c = &idx[i];
		int s;
		size_t at;

		if (domain != NULL && strcmp(domain, "all") != 0 &&
		    strcmp(domain, c->domain) != 0)
			continue;
		s = mesh_ui_score(c, kw, nkw);
		if (s <= 0)
			continue;
		/* insertion into the best max so far */
		for (at = got;
		     at > 0 && ranks_before(s, c, sc[at - 1], out[at - 1]);
		     at--)
			;
		if (at >= max)
			continue;
		if (got < max)
			got++;
		memmove(&out[at + 1], &out[at], (got - 1 - at) * sizeof(*out));
		memmove(&sc[at + 1], &sc[at], (got - 1 - at) * sizeof(*sc));
		out[at] = c;
		sc[at] = s;
	}
	if (scores != NULL)
		memcpy(scores, sc, got * sizeof(*sc));
	return got;
}

static int
get_citations(struct call *call, const json_t *args, json_t **result)
{
	const char *keywords = tool_arg_str(args, "keywords");
	const char *domain = tool_arg_str(args, "domain");
	const struct citation *hit[CITATIONS_TOP];
	int score[CITATIONS_TOP];
	struct tool_rows rows = {"citations", NULL, "citations", 0, 0, 0};
	json_t *sc = NULL, *list;
	struct buf b;
	size_t n;
	int rc;

	if (keywords == NULL)
		keywords = "";
	if (domain == NULL)
		domain = "all";
	n = mesh_ui_find(mesh_ui_citations, mesh_ui_citations_count, keywords,
			 domain, hit, score, CITATIONS_TOP);
	buf_init(&b, call_text_budget(call));
	sc = json_pack("{s:[]}", "citations");
	if (sc == NULL)
		return STATUS_NOMEM;
	list = json_object_get(sc, "citations");
	if (n == 0)
		buf_printf(&b,
			   "No documentation matches \"%s\"%s%s: try other or "
			   "fewer keywords (comma-separated)%s.",
			   keywords, strcmp(domain, "all") != 0 ? " in " : "",
			   strcmp(domain, "all") != 0 ? domain : "",
			   strcmp(domain, "all") != 0 ? ", or domain \"all\""
						      : "");
	for (size_t i = 0; i < n; i++) {
		if (json_array_append_new(
			    list, json_pack("{s:s, s:s, s:s, s:s, s:i}", "link",
					    hit[i]->link, "title",
					    hit[i]->title, "body", hit[i]->body,
					    "domain", hit[i]->domain, "score",
					    score[i])) != 0) {
			json_decref(sc);
			buf_free(&b);
			return STATUS_NOMEM;
		}
		buf_printf(&b, "%s%zu. %s (%s)\n%s\n", i > 0 ? "\n" : "", i + 1,
			   hit[i]->title, hit[i]->link, hit[i]->body);
		(void)tool_fit(&b);
	}
	rc = tool_result_fit(call, &b, sc, &rows, 1, NULL, result);
	buf_free(&b);
	return tool_done(rc, result);
}

/* ---- get_action_ui ------------------------------------------------------ */

/*
 * The gateway's own pages for each resourceType: the web console's deep
 * links (server/rest/ui.c, docs/console.md), the resource's name appended
 * percent-encoded where with_name is set (left out without a name), and the
 * operator pages (server/http/http.c: GET /readyz, /metrics).  The console
 * has no workload page: a workload opens the overview filtered by its name.
 */
static const struct {
	const char *type, *path, *title; /* the name follows the title */
	bool with_name;
} gateway_views[] = {
	{"overview", "/ui/", "Sextant console: services overview", false},
	{"overview", "/readyz", "Sextant gateway readiness", false},
	{"overview", "/metrics", "Sextant gateway metrics (Prometheus text)",
	 false},
	{"graph", "/ui/graph", "Sextant console: service graph", false},
	{"service", "/ui/services/", "Sextant console: service ", true},
	{"app", "/ui/services/", "Sextant console: service ", true},
	{"workload", "/ui/?filter=", "Sextant console: services matching ",
	 true},
};

/* Kiali's tabs of a detail page by resource type (get_action_ui.go's
 * tabMap and getTabLabel): another tab opens "info", and a service's
 * in_metrics and out_metrics open "metrics". */
static const char *
kiali_tab(const char *type, const char *tab)
{
	static const char *const svc[] = {"info", "traffic", "metrics",
					  "traces", NULL};
	static const char *const wl[] = {"info",       "traffic",     "logs",
					 "in_metrics", "out_metrics", "traces",
					 "envoy",      NULL};
	static const char *const app[] = {
		"info", "traffic", "in_metrics", "out_metrics", "traces", NULL};
	const char *const *ok = strcmp(type, "service") == 0	? svc
				: strcmp(type, "workload") == 0 ? wl
								: app;

	if (strcmp(type, "service") == 0 &&
	    (strcmp(tab, "in_metrics") == 0 || strcmp(tab, "out_metrics") == 0))
		return "metrics";
	for (; *ok; ok++)
		if (strcmp(*ok, tab) == 0)
			return tab;
	return "info";
}

/* A Kubernetes namespace name (RFC 1123 label). */
static bool
namespace_ok(const char *s, size_t n)
{
	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!(islower((unsigned char)s[i]) ||
		      isdigit((unsigned char)s[i]) || s[i] == '-'))
			return false;
	return true;
}

/* s percent-encoded (RFC 3986 unreserved characters pass), appended. */
static void
put_escaped(struct buf *b, const char *s)
{
	char *e = curl_easy_escape(NULL, s, 0);

	if (e == NULL) {
		buf_set_error(b, STATUS_NOMEM);
		return;
	}
	buf_puts(b, e);
	curl_free(e);
}

/* base with its trailing '/'s dropped, appended. */
static void
put_base(struct buf *b, const char *base)
{
	size_t n = strlen(base);

	while (n > 0 && base[n - 1] == '/')
		n--;
	buf_append(b, base, n);
}

/* Appends {title, kind: "navigation", payload: b's text, target}; b is
 * reset.  STATUS_OK or b's error / STATUS_NOMEM. */
static int
add_action(json_t *actions, const char *target, const char *title,
	   struct buf *b)
{
	int rc = buf_error(b);

	if (rc == STATUS_OK &&
	    json_array_append_new(
		    actions, json_pack("{s:s, s:s, s:s, s:s}", "title", title,
				       "kind", "navigation", "payload", b->data,
				       "target", target)) != 0)
		rc = STATUS_NOMEM;
	buf_reset(b);
	return rc;
}

/* Kiali's path for the view (get_action_ui.go), under its console. */
static void
kiali_path(struct buf *b, const char *type, const char *ns, size_t nns,
	   const char *name, const char *graph, const char *graph_type,
	   const char *tab, const char *cluster, char *title, size_t cap)
{
	const char *label = strcmp(type, "workload") == 0 ? "workloads"
			    : strcmp(type, "app") == 0	  ? "applications"
							  : "services";

	if (strcmp(type, "graph") == 0 && strcmp(graph, "mesh") == 0) {
		buf_puts(b, "/mesh");
		snprintf(title, cap, "Kiali: mesh graph");
	} else if (strcmp(type, "graph") == 0) {
		buf_puts(b, "/graph/namespaces?");
		if (nns > 0)
			buf_printf(b, "namespaces=%s&", ns);
		buf_printf(b, "graphType=%s", graph_type);
		snprintf(title, cap, "Kiali: traffic graph of %s",
			 nns > 0 ? ns : "all namespaces");
	} else if (strcmp(type, "overview") == 0) {
		buf_puts(b, "/overview");
		snprintf(title, cap, "Kiali: overview");
	} else if (strcmp(type, "istio") == 0) {
		buf_puts(b, "/istio");
		if (nns > 0)
			buf_printf(b, "?namespaces=%s", ns);
		snprintf(title, cap, "Kiali: Istio config of %s",
			 nns > 0 ? ns : "all namespaces");
	} else if (name == NULL) {
		buf_printf(b, "/%s", label);
		if (nns > 0)
			buf_printf(b, "?namespaces=%s", ns);
		snprintf(title, cap, "Kiali: %s of %s", label,
			 nns > 0 ? ns : "all namespaces");
	} else {
		buf_printf(b, "/namespaces/%s/%s/", ns, label);
		put_escaped(b, name);
		buf_printf(b, "?tab=%s", kiali_tab(type, tab));
		snprintf(title, cap, "Kiali: %s %s in %s", type, name, ns);
	}
	if (cluster != NULL && strcmp(type, "overview") != 0 &&
	    !(strcmp(type, "graph") == 0 && strcmp(graph, "mesh") == 0)) {
		buf_puts(b, strchr(b->data != NULL ? b->data : "", '?') != NULL
				    ? "&clusterName="
				    : "?clusterName=");
		put_escaped(b, cluster);
	}
}

/* Grafana Explore on the Tempo data source with the resource's TraceQL
 * query over the last hour (Explore's "panes" URL state). */
static int
grafana_explore(struct buf *b, const struct mesh_links *links, const char *type,
		const char *name)
{
	const char *attr = strcmp(type, "workload") == 0
				   ? "resource.k8s.deployment.name"
				   : "resource.service.name";
	const char *uid = links->grafana_datasource;
	json_t *q = NULL, *pane = NULL, *panes = NULL, *ds;
	char *query = NULL, *text = NULL;
	struct buf qb;
	int rc = STATUS_NOMEM;

	/* a TraceQL string: '"' and '\' escaped */
	buf_init(&qb, 1024);
	buf_printf(&qb, "{%s=\"", attr);
	for (const char *p = name; *p; p++)
		buf_printf(&qb, "%s%c", *p == '"' || *p == '\\' ? "\\" : "",
			   *p);
	buf_puts(&qb, "\"}");
	if (buf_finish(&qb, &query, NULL) != STATUS_OK)
		goto out;
	q = json_pack("{s:s, s:s, s:s}", "refId", "A", "queryType", "traceql",
		      "query", query);
	pane = json_pack("{s:[O], s:{s:s, s:s}}", "queries", q, "range", "from",
			 "now-1h", "to", "now");
	if (q == NULL || pane == NULL)
		goto out;
	if (uid != NULL && *uid != '\0') {
		ds = json_pack("{s:s, s:s}", "type", "tempo", "uid", uid);
		if (ds == NULL || json_object_set(q, "datasource", ds) != 0 ||
		    json_object_set_new(pane, "datasource", json_string(uid)) !=
			    0) {
			json_decref(ds);
			goto out;
		}
		json_decref(ds);
	}
	panes = json_pack("{s:O}", "sextant", pane);
	text = panes != NULL ? json_dumps(panes, JSON_COMPACT) : NULL;
	if (text == NULL)
		goto out;
	put_base(b, links->grafana_url);
	buf_puts(b, "/explore?schemaVersion=1&panes=");
	put_escaped(b, text);
	rc = STATUS_OK;
out:
	buf_free(&qb);
	free(query);
	free(text);
	json_decref(q);
	json_decref(pane);
	json_decref(panes);
	return rc;
}

static bool
configured(const char *s)
{
	return s != NULL && *s != '\0';
}

int
mesh_ui_actions(const struct mesh_links *links, const json_t *args, json_t **sc,
		char *err, size_t errlen)
{
	const char *type = tool_arg_str(args, "resourceType");
	const char *nsarg = tool_arg_str(args, "namespaces");
	const char *name = tool_arg_str(args, "resourceName");
	const char *graph = tool_arg_str(args, "graph");
	const char *graph_type = tool_arg_str(args, "graphType");
	const char *tab = tool_arg_str(args, "tab");
	const char *cluster = tool_arg_str(args, "clusterName");
	bool resource, svc_name;
	char ns[1024], title[1400]; /* ns, a name and a few words */
	size_t nns = 0, k = 0;
	json_t *out = NULL, *actions;
	struct buf b, errors;
	int rc = STATUS_NOMEM;

	*sc = NULL;
	if (type == NULL) {
		snprintf(err, errlen,
			 "resourceType: expected service, workload, app, "
			 "istio, graph or overview");
		return STATUS_INVALID;
	}
	graph = graph != NULL ? graph : "traffic";
	graph_type = graph_type != NULL ? graph_type : "versionedApp";
	tab = tab != NULL ? tab : "info";
	resource = strcmp(type, "service") == 0 ||
		   strcmp(type, "workload") == 0 || strcmp(type, "app") == 0;
	if (!resource)
		name = NULL; /* Kiali names no single graph, overview or
				istio object without looking it up */
	/* namespaces: Kubernetes names, comma-separated; "all" = none */
	for (const char *p = nsarg != NULL ? nsarg : ""; *p;) {
		size_t len = strcspn(p, ",");
		const char *s = p;
		size_t n = len;

		while (n > 0 && *s == ' ')
			s++, n--;
		while (n > 0 && s[n - 1] == ' ')
			n--;
		p += len + (p[len] == ',');
		if (n == 0 || (n == 3 && memcmp(s, "all", 3) == 0))
			continue;
		if (!namespace_ok(s, n)) {
			snprintf(err, errlen,
				 "namespaces: \"%.*s\" is not a namespace "
				 "name (lowercase letters, digits and '-', "
				 "at most 63): give names separated by commas",
				 (int)(n > 63 ? 63 : n), s);
			return STATUS_INVALID;
		}
		if (k + n + 2 > sizeof(ns)) {
			snprintf(err, errlen,
				 "namespaces: too many; give at most a few "
				 "dozen, or none for all");
			return STATUS_INVALID;
		}
		if (k > 0)
			ns[k++] = ',';
		memcpy(ns + k, s, n);
		k += n;
		nns++;
	}
	ns[k] = '\0';

	buf_init(&b, 16384);
	buf_init(&errors, 1024);
	out = json_pack("{s:[]}", "actions");
	if (out == NULL)
		goto out;
	actions = json_object_get(out, "actions");
	for (size_t i = 0; i < sizeof(gateway_views) / sizeof(gateway_views[0]);
	     i++) {
		if (strcmp(gateway_views[i].type, type) != 0 ||
		    (gateway_views[i].with_name && name == NULL))
			continue;
		buf_puts(&b, gateway_views[i].path);
		if (gateway_views[i].with_name)
			put_escaped(&b, name);
		snprintf(title, sizeof(title), "%s%s", gateway_views[i].title,
			 gateway_views[i].with_name ? name : "");
		if ((rc = add_action(actions, "sextant", title, &b)) !=
		    STATUS_OK)
			goto out;
	}
	if (configured(links->kiali_url)) {
		if (name != NULL && nns != 1) {
			buf_printf(&errors,
				   "%sKiali's %s details need exactly one "
				   "namespace: give namespaces",
				   errors.len > 0 ? "; " : "", type);
		} else {
			put_base(&b, links->kiali_url);
			buf_puts(&b, "/console");
			kiali_path(&b, type, ns, nns, name, graph, graph_type,
				   tab, cluster, title, sizeof(title));
			if ((rc = add_action(actions, "kiali", title, &b)) !=
			    STATUS_OK)
				goto out;
		}
	}
	if (configured(links->grafana_url) && name != NULL) {
		rc = grafana_explore(&b, links, type, name);
		snprintf(title, sizeof(title), "Grafana Explore: traces of %s",
			 name);
		if (rc != STATUS_OK ||
		    (rc = add_action(actions, "grafana", title, &b)) !=
			    STATUS_OK)
			goto out;
	}
	/* Jaeger's service is service.name: a service's or an app's name */
	svc_name = name != NULL && strcmp(type, "workload") != 0;
	if (configured(links->jaeger_url) && svc_name) {
		put_base(&b, links->jaeger_url);
		buf_puts(&b, "/search?service=");
		put_escaped(&b, name);
		snprintf(title, sizeof(title), "Jaeger: traces of %s", name);
		if ((rc = add_action(actions, "jaeger", title, &b)) !=
		    STATUS_OK)
			goto out;
	}
	rc = buf_error(&errors);
	if (rc == STATUS_OK && errors.len > 0 &&
	    json_object_set_new(out, "errors",
				json_stringn(errors.data, errors.len)) != 0)
		rc = STATUS_NOMEM;
	if (rc == STATUS_OK) {
		*sc = out;
		out = NULL;
	}
out:
	buf_free(&b);
	buf_free(&errors);
	json_decref(out);
	return rc;
}

static int
get_action_ui(struct call *call, const json_t *args, json_t **result)
{
	const struct config *cfg = call_config(call);
	struct mesh_links links = {0};
	json_t *sc = NULL, *a;
	const char *errors;
	char err[512];
	struct buf b;
	size_t i;
	int rc;

	if (cfg != NULL)
		links = (struct mesh_links){
			cfg->links.grafana_url, cfg->links.grafana_datasource,
			cfg->links.kiali_url, cfg->links.jaeger_url};
	rc = mesh_ui_actions(&links, args, &sc, err, sizeof(err));
	if (rc == STATUS_INVALID) {
		*result = tool_result_error("%s", err);
		return tool_done(STATUS_OK, result);
	}
	if (rc != STATUS_OK)
		return rc;
	/* Like Kiali's, the text is an acknowledgment: the actions are for
	 * the UI. */
	buf_init(&b, call_text_budget(call));
	errors = json_string_value(json_object_get(sc, "errors"));
	json_array_foreach(json_object_get(sc, "actions"), i, a)
	{
		buf_printf(&b, "%s%s", i == 0 ? "Views to open: " : "; ",
			   json_string_value(json_object_get(a, "title")));
		(void)tool_fit(&b);
	}
	if (i > 0)
		buf_puts(&b, " (actions in structured content).");
	else
		buf_printf(&b,
			   "No view to open: Sextant's gateway has no page "
			   "for this yet%s.",
			   errors != NULL ? ""
					  : ", and [links] names no console "
					    "(kiali_url, grafana_url, "
					    "jaeger_url)");
	if (errors != NULL)
		buf_printf(&b, " Left out: %s.", errors);
	(void)tool_fit(&b);
	rc = tool_result_buf(&b, sc, result);
	buf_free(&b);
	return tool_done(rc, result);
}

const struct tool_handler mesh_ui_tool_handlers[] = {
	{"get_citations", get_citations},
	{"get_action_ui", get_action_ui},
	{NULL, NULL},
};
