/*
 * prompts.c - the investigation prompts (RFD 054) and completion/complete.
 *
 * Both read one in-memory picture of the store: services busiest first
 * with their namespace, GenAI models, recent trace and session ids.  A
 * request that finds it older than LIVE_FRESH_MS queues one refresh job on
 * the worker pool and answers from what it has: MHD threads never query,
 * and typing a completion costs no query per keystroke.  live.mu guards
 * the picture; the job builds a new one unlocked and swaps it in.
 */
#include "mcp/prompts.h"

#include <ctype.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/pool.h"
#include "base/strdist.h"
#include "core/server.h"
#include "mcp/catalog.h"
#include "pg/pg.h"
#include "telemetry/genai.h"
#include "telemetry/recentids.h"
#include "telemetry/servicequery.h"

/* How old the picture may be before a request asks for a new one. */
#define LIVE_FRESH_MS 2000
/* Services a prompt or the instructions name: about 50 tokens' worth of
 * context at most (RFD 054); completions see them all. */
#define LIVE_PROMPT_SERVICES 50
/* Services, models, trace and session ids kept: enough that completing
 * an id by its first characters finds the id among a busy day's (about
 * 100 KB per set at most); completion answers at most 100 anyway. */
#define LIVE_MAX RECENTIDS_MAX
/* completion/complete values at most (MCP completion). */
#define COMPLETE_MAX 100
/* How far back the picture looks. */
#define LIVE_RANGE_MS (24 * 3600 * 1000LL)
/* Each statement of a refresh at most: a slow store answers from the
 * picture it has rather than hold a connection (the refresh is retried
 * LIVE_FRESH_MS later). */
#define LIVE_STATEMENT_MS 1000
/* A prompt's text at most: rules, 50 names and a plan fit in 4 KB. */
#define PROMPT_TEXT_MAX 8192

struct live_set {
	char **v;
	size_t n;
};

enum {
	LIVE_SERVICES,
	LIVE_NAMESPACES,
	LIVE_MODELS,
	LIVE_TRACES,
	LIVE_SESSIONS,
	LIVE_SETS
};

struct live_pic {
	struct live_set sets[LIVE_SETS];
	char **svc_ns; /* namespace of sets[LIVE_SERVICES].v[i], or NULL */
};

static struct {
	pthread_mutex_t mu;
	struct live_pic pic;
	int64_t at_ms; /* when the last refresh was asked; 0: never */
	bool running;  /* a refresh job is queued or running */
	struct pool_job job;
	struct server *srv;
} live = {.mu = PTHREAD_MUTEX_INITIALIZER};

static void
set_free(struct live_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static void
pic_free(struct live_pic *p)
{
	for (size_t i = 0; p->svc_ns != NULL && i < p->sets[0].n; i++)
		free(p->svc_ns[i]);
	free(p->svc_ns);
	p->svc_ns = NULL;
	for (int k = 0; k < LIVE_SETS; k++)
		set_free(&p->sets[k]);
}

/* Appends a copy of v unless present; false on NOMEM. */
static bool
set_add(struct live_set *s, const char *v)
{
	char **nv;

	if (v == NULL || v[0] == '\0' || s->n >= LIVE_MAX)
		return true;
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i], v) == 0)
			return true;
	if ((nv = realloc(s->v, (s->n + 1) * sizeof(*nv))) == NULL)
		return false;
	s->v = nv;
	if ((s->v[s->n] = strdup(v)) == NULL)
		return false;
	s->n++;
	return true;
}

static bool
read_services(struct pg_conn *c, int64_t now, struct live_pic *p)
{
	struct servicequery_filter f = {.from_ms = now - LIVE_RANGE_MS,
					.to_ms = now};
	struct servicequery_result *r = NULL;
	struct pg_error err;
	bool ok = true;
	size_t n;

	if (servicequery_list(c, &f, now, &r, &err) != STATUS_OK)
		return false;
	n = r->n < LIVE_MAX ? r->n : LIVE_MAX;
	if ((p->svc_ns = calloc(n + 1, sizeof(*p->svc_ns))) == NULL)
		ok = false;
	for (size_t i = 0; ok && i < n; i++) {
		const struct servicequery_service *s = &r->services[i];

		ok = set_add(&p->sets[LIVE_SERVICES], s->service) &&
		     set_add(&p->sets[LIVE_NAMESPACES], s->ns);
		if (ok && s->ns != NULL && p->sets[LIVE_SERVICES].n > 0 &&
		    p->svc_ns[p->sets[LIVE_SERVICES].n - 1] == NULL &&
		    (p->svc_ns[p->sets[LIVE_SERVICES].n - 1] = strdup(s->ns)) ==
			    NULL)
			ok = false;
	}
	servicequery_free(r);
	return ok;
}

static bool
read_models(struct pg_conn *c, int64_t now, struct live_pic *p)
{
	struct genai_names *nm = NULL;
	struct pg_error err;
	bool ok = true;

	if (genai_names_get(c, GENAI_KEY_MODEL, now - LIVE_RANGE_MS, now,
			    GENAI_MAX_NAMES, &nm, &err) == STATUS_OK)
		for (size_t i = 0; ok && i < nm->n; i++)
			ok = set_add(&p->sets[LIVE_MODELS], nm->names[i]);
	genai_names_free(nm);
	return ok;
}

/* The most recent trace or session ids, newest first. */
static bool
read_ids(struct pg_conn *c, int64_t now, enum recentids_kind kind,
	 struct live_set *set)
{
	struct recentids *r = NULL;
	struct pg_error err;
	bool ok = true;

	if (recentids_get(c, kind, now - LIVE_RANGE_MS, now, LIVE_MAX, &r,
			  &err) != STATUS_OK)
		return false;
	for (size_t i = 0; ok && i < r->n; i++)
		ok = set_add(set, r->ids[i]);
	recentids_free(r);
	return ok;
}

static void
refresh_run(struct pool_job *job)
{
	struct live_pic pic = {0};
	struct pg_conn *c = NULL;
	struct pg_error err;
	int64_t now = clock_wall_ms();
	bool ok;

	(void)job;
	ok = pg_acquire(live.srv->pg, NULL, 2000, &c, &err) == STATUS_OK &&
	     pg_set_timeout(c, LIVE_STATEMENT_MS, &err) == STATUS_OK &&
	     read_services(c, now, &pic);
	/* models, sessions and traces are extras: a store without GenAI
	 * spans still gives its services */
	if (ok) {
		(void)read_models(c, now, &pic);
		(void)read_ids(c, now, RECENTIDS_TRACES,
			       &pic.sets[LIVE_TRACES]);
		(void)read_ids(c, now, RECENTIDS_SESSIONS,
			       &pic.sets[LIVE_SESSIONS]);
	}
	pg_release(c);
	pthread_mutex_lock(&live.mu);
	if (ok) {
		struct live_pic old = live.pic;

		live.pic = pic;
		pic = old;
	}
	live.running = false;
	pthread_mutex_unlock(&live.mu);
	pic_free(&pic);
}

/* Under live.mu: queue a refresh when the picture is stale. */
static void
refresh_maybe_locked(void)
{
	int64_t now = clock_mono_ms();

	if (live.srv == NULL || live.srv->pg == NULL || live.running ||
	    (live.at_ms != 0 && now - live.at_ms < LIVE_FRESH_MS))
		return;
	live.job.run = refresh_run;
	if (pool_submit(live.srv->pool, &live.job) == STATUS_OK) {
		live.running = true;
		live.at_ms = now;
	}
}

/* Appends "name (ns), ..." of the busiest services (live.mu held). */
static void
services_line_locked(struct buf *b)
{
	const struct live_set *s = &live.pic.sets[LIVE_SERVICES];
	size_t n = s->n < LIVE_PROMPT_SERVICES ? s->n : LIVE_PROMPT_SERVICES;

	if (s->n == 0) {
		buf_puts(b, "none seen yet (list_services will tell)");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		buf_printf(b, "%s%s", i == 0 ? "" : ", ", s->v[i]);
		if (live.pic.svc_ns[i] != NULL)
			buf_printf(b, " (%s)", live.pic.svc_ns[i]);
	}
	if (s->n > n)
		buf_printf(b, " and %zu more", s->n - n);
}

#define RULES                                                                  \
	"Read the user's words as tool arguments: a service as they name it "  \
	"(the tools resolve \"the payment service\" to payment); \"last "      \
	"hour\" -> time_range \"1h\", \"since yesterday 3pm\" as written; "    \
	"\"errors\" -> status_code_range \"errors\" (5xx and gRPC server "     \
	"errors), \"success\" -> \"success\" (2xx)."

char *
prompts_instructions(struct server *srv, const char *base)
{
	struct buf b;
	char *out = NULL;

	(void)srv;
	buf_init(&b, PROMPT_TEXT_MAX);
	pthread_mutex_lock(&live.mu);
	if (live.srv == NULL) { /* no prompts here: conformance fixtures */
		pthread_mutex_unlock(&live.mu);
		return strdup(base);
	}
	refresh_maybe_locked();
	buf_printf(&b, "%s\n%s\nServices (busiest first): ", base, RULES);
	services_line_locked(&b);
	pthread_mutex_unlock(&live.mu);
	if (buf_finish(&b, &out, NULL) != STATUS_OK)
		buf_free(&b);
	return out;
}

#define PROMPTS_TEMPLATES 3
static const struct resource_template_def templates[PROMPTS_TEMPLATES];

/* ---- prompts ------------------------------------------------------------- */

struct plan {
	const char *name;
	const char *intro; /* printf format over the arguments' values */
	const char *steps;
};

static const char *
arg_or(const json_t *args, const char *name, const char *dflt)
{
	const char *v = json_string_value(json_object_get(args, name));

	return v != NULL && v[0] != '\0' ? v : dflt;
}

/* A GetPromptResult: the rules, the live services, then the plan. */
static int
prompt_build(const char *description, const char *task, const char *steps,
	     json_t **result)
{
	struct buf b;
	char *text = NULL;

	buf_init(&b, PROMPT_TEXT_MAX);
	buf_printf(&b, "%s\n\n%s\nServices now (busiest first): ", task, RULES);
	pthread_mutex_lock(&live.mu);
	refresh_maybe_locked();
	services_line_locked(&b);
	pthread_mutex_unlock(&live.mu);
	buf_printf(&b, "\n\nPlan:\n%s", steps);
	if (buf_finish(&b, &text, NULL) != STATUS_OK) {
		buf_free(&b);
		return STATUS_NOMEM;
	}
	*result = json_pack("{s:s, s:[{s:s, s:{s:s, s:s}}]}", "description",
			    description, "messages", "role", "user", "content",
			    "type", "text", "text", text);
	free(text);
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

static int
get_investigate(const json_t *args, json_t **result, char *err, size_t len)
{
	char task[512];
	const char *svc = arg_or(args, "service", "");
	const char *tr = arg_or(args, "time_range", "1h");

	(void)err;
	(void)len;
	snprintf(task, sizeof(task),
		 "Investigate service %.200s over time_range %.100s: is it "
		 "healthy, and if not, why?",
		 svc, tr);
	return prompt_build(
		"Investigate one service", task,
		"1. query_metrics {service, time_range, compare_to: "
		"\"previous\"}: requests, errors, P95 and what changed.\n"
		"2. query_traces {service, time_range, sort: \"slowest\"} and "
		"the failed ones; get_trace on the worst trace_id.\n"
		"3. list_services {time_range} for its neighbours when a "
		"downstream call is the cause.\n"
		"4. Answer: verdict, evidence (figures, trace ids), next step.",
		result);
}

static int
get_error_triage(const json_t *args, json_t **result, char *err, size_t len)
{
	char task[512];
	const char *svc = arg_or(args, "service", NULL);
	const char *tr = arg_or(args, "time_range", "1h");

	(void)err;
	(void)len;
	snprintf(task, sizeof(task),
		 "Triage the errors %s%.200s over time_range %.100s: which "
		 "fail, how often, and the cause.",
		 svc != NULL ? "of service " : "of every service",
		 svc != NULL ? svc : "", tr);
	return prompt_build(
		"Triage errors", task,
		"1. list_services {time_range} (or query_metrics {service, "
		"time_range, status_code_range: \"errors\"}): error counts "
		"and codes per service.\n"
		"2. query_traces {service, time_range} for failed traces; "
		"get_trace on one: the error chain ends at the cause.\n"
		"3. Answer: the failing calls by count, the cause with its "
		"code and exception, the trace ids.",
		result);
}

static int
get_latency(const json_t *args, json_t **result, char *err, size_t len)
{
	char task[512];
	const char *svc = arg_or(args, "service", "");
	const char *cmp = arg_or(args, "compare_to", "previous");

	(void)err;
	(void)len;
	snprintf(task, sizeof(task),
		 "Find whether service %.200s got slower than compare_to "
		 "%.100s, and where the time goes.",
		 svc, cmp);
	return prompt_build(
		"Latency regression", task,
		"1. query_metrics {service, time_range: \"1h\", compare_to}: "
		"P95 change per route and method.\n"
		"2. query_traces {service, sort: \"slowest\"}; get_trace on "
		"the slowest: its bottleneck span.\n"
		"3. Answer: the routes that regressed with figures, the "
		"bottleneck, the trace ids.",
		result);
}

static int
get_genai_cost(const json_t *args, json_t **result, char *err, size_t len)
{
	char task[512];
	const char *svc = arg_or(args, "service", NULL);
	const char *tr = arg_or(args, "time_range", "24h");

	(void)err;
	(void)len;
	const char *model = arg_or(args, "model", NULL);

	snprintf(task, sizeof(task),
		 "Review LLM cost and usage %s%.200s%s%.100s over time_range "
		 "%.100s.",
		 svc != NULL ? "of service " : "of every service",
		 svc != NULL ? svc : "", model != NULL ? ", model " : "",
		 model != NULL ? model : "", tr);
	return prompt_build(
		"GenAI cost review", task,
		"1. analyze_genai {time_range, service, model}: cost, tokens "
		"and "
		"calls by model, service and session, against the previous "
		"period.\n"
		"2. get_session on the most expensive session_id.\n"
		"3. Answer: where the money goes, what changed, what to "
		"try (model, prompt size, caching).",
		result);
}

static int
get_compare_sessions(const json_t *args, json_t **result, char *err, size_t len)
{
	char task[512];

	(void)err;
	(void)len;
	snprintf(task, sizeof(task),
		 "Compare agent sessions %.200s and %.200s: cost, tokens, "
		 "latency, tool calls and errors.",
		 arg_or(args, "session_a", ""), arg_or(args, "session_b", ""));
	return prompt_build(
		"Compare two sessions", task,
		"1. compare_sessions {session_id_1: session_a, session_id_2: "
		"session_b}.\n"
		"2. get_session on each for the calls that differ.\n"
		"3. Answer: which is cheaper or faster and why, with "
		"figures.",
		result);
}

static const struct prompt_arg_def investigate_args[] = {
	{"service", "The service, as the user names it", 1},
	{"time_range", "How far back: \"1h\", \"24h\", \"last hour\"", 0},
	{NULL, NULL, 0},
};
static const struct prompt_arg_def triage_args[] = {
	{"service", "The service (default: every service)", 0},
	{"time_range", "How far back: \"1h\", \"24h\", \"last hour\"", 0},
	{NULL, NULL, 0},
};
static const struct prompt_arg_def latency_args[] = {
	{"service", "The service, as the user names it", 1},
	{"compare_to", "Baseline: \"previous\", \"1d\", \"7d\"", 0},
	{NULL, NULL, 0},
};
static const struct prompt_arg_def genai_args[] = {
	{"time_range", "How far back: \"24h\", \"7d\", \"today\"", 0},
	{"service", "The service (default: every service)", 0},
	{"model", "The model (default: every model)", 0},
	{NULL, NULL, 0},
};
static const struct prompt_arg_def compare_args[] = {
	{"session_a", "The first session id", 1},
	{"session_b", "The second session id", 1},
	{NULL, NULL, 0},
};

static const struct prompt_def prompts[] = {
	{.name = "investigate_service",
	 .title = "Investigate a service",
	 .description = "Health of one service: traffic, errors, latency, "
			"their change and the traces behind them",
	 .args = investigate_args,
	 .get = get_investigate},
	{.name = "error_triage",
	 .title = "Triage errors",
	 .description = "Which calls fail, how often and why, for one "
			"service or all",
	 .args = triage_args,
	 .get = get_error_triage},
	{.name = "latency_regression",
	 .title = "Latency regression",
	 .description = "Whether a service got slower than a baseline and "
			"where the time goes",
	 .args = latency_args,
	 .get = get_latency},
	{.name = "genai_cost_review",
	 .title = "GenAI cost review",
	 .description = "LLM cost and tokens by model, service and session",
	 .args = genai_args,
	 .get = get_genai_cost},
	{.name = "compare_sessions",
	 .title = "Compare two agent sessions",
	 .description = "Cost, tokens, latency and errors of two sessions "
			"side by side",
	 .args = compare_args,
	 .get = get_compare_sessions},
};

int
prompts_register_catalog(struct server *srv)
{
	int rc = STATUS_OK;

	pthread_mutex_lock(&live.mu);
	live.srv = srv;
	pthread_mutex_unlock(&live.mu);
	for (size_t i = 0;
	     rc == STATUS_OK && i < sizeof(prompts) / sizeof(prompts[0]); i++)
		rc = catalog_add_prompt(srv->catalog, &prompts[i]);
	for (size_t i = 0; rc == STATUS_OK && i < PROMPTS_TEMPLATES; i++)
		rc = catalog_add_template(srv->catalog, &templates[i], NULL);
	return rc;
}

/* ---- completion ---------------------------------------------------------- */

static const char *const time_ranges[] = {
	"15m",
	"30m",
	"1h",
	"3h",
	"6h",
	"12h",
	"24h",
	"2d",
	"7d",
	"last hour",
	"last 30 minutes",
	"today",
	"yesterday",
	"this morning",
	NULL,
};
static const char *const baselines[] = {"previous", "1h", "1d", "7d", NULL};

/* Which values an argument or template variable takes: a live set, or a
 * fixed list in *fixed.  -1 when none. */
static int
arg_kind(const char *arg, const char *const **fixed)
{
	*fixed = NULL;
	if (strcmp(arg, "service") == 0)
		return LIVE_SERVICES;
	if (strcmp(arg, "namespace") == 0)
		return LIVE_NAMESPACES;
	if (strcmp(arg, "model") == 0)
		return LIVE_MODELS;
	if (strcmp(arg, "trace_id") == 0)
		return LIVE_TRACES;
	if (strcmp(arg, "session_id") == 0 || strcmp(arg, "session_a") == 0 ||
	    strcmp(arg, "session_b") == 0)
		return LIVE_SESSIONS;
	if (strcmp(arg, "time_range") == 0)
		*fixed = time_ranges;
	else if (strcmp(arg, "compare_to") == 0)
		*fixed = baselines;
	return -1;
}

static bool
prefix_ci(const char *s, const char *p)
{
	for (; *p != '\0'; s++, p++)
		if (tolower((unsigned char)*s) != tolower((unsigned char)*p))
			return false;
	return true;
}

/* Close enough to suggest: within one edit per four typed characters
 * (at least one; none below three) of the name or of its prefix of that
 * length: "paymnets" finds payments, "pay" does not find mailer. */
static bool
fuzzy(const char *s, const char *p)
{
	size_t lp = strlen(p), ls = strlen(s), cap = lp < 8 ? 1 : lp / 4;

	if (lp < 3)
		return false;
	return strdist(s, ls < lp ? ls : lp, p, lp, true, cap + 1) <= cap ||
	       strdist(s, ls, p, lp, true, cap + 1) <= cap;
}

int
prompts_complete(struct server *srv, const char *arg, const char *value,
		 json_t **values, size_t *total)
{
	const char *const *fixed;
	const char *const *v;
	int kind = arg_kind(arg, &fixed);
	json_t *out = json_array();
	size_t n = 0;
	int rc = STATUS_OK;

	*values = NULL;
	*total = 0;
	if (out == NULL)
		return STATUS_NOMEM;
	(void)srv;
	pthread_mutex_lock(&live.mu);
	if (kind >= 0) {
		refresh_maybe_locked();
		v = (const char *const *)live.pic.sets[kind].v;
		n = live.pic.sets[kind].n;
	} else {
		v = fixed;
		while (fixed != NULL && fixed[n] != NULL)
			n++;
	}
	/* pass 0: prefix matches (the store's order: busiest, newest);
	 * pass 1: the fuzzy others */
	for (int pass = 0; pass < 2 && rc == STATUS_OK; pass++)
		for (size_t i = 0; i < n && rc == STATUS_OK; i++) {
			bool pre = prefix_ci(v[i], value);

			if (pass == 0 ? !pre : pre || !fuzzy(v[i], value))
				continue;
			(*total)++;
			if (json_array_size(out) < COMPLETE_MAX &&
			    json_array_append_new(out, json_string(v[i])) != 0)
				rc = STATUS_NOMEM;
		}
	pthread_mutex_unlock(&live.mu);
	if (rc != STATUS_OK) {
		json_decref(out);
		return rc;
	}
	*values = out;
	return STATUS_OK;
}

/* ---- resource templates ---------------------------------------------------- */

static const struct {
	const char *prefix;
	const char *tool;
	const char *arg;
} readers[] = {
	{"sextant://services/", "query_metrics", "service"},
	{"sextant://traces/", "get_trace", "trace_id"},
	{"sextant://sessions/", "get_session", "session_id"},
};

static int
hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = (char)tolower((unsigned char)ch);
	return ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

/* RFC 3986 percent-decoding of a simple-string expansion; false for a
 * bad escape, an encoded NUL or slash, or an empty value. */
static bool
uri_decode(const char *in, char *out, size_t cap)
{
	size_t n = 0;

	for (; *in != '\0'; in++) {
		int ch = (unsigned char)*in;

		if (ch == '/' || n + 1 >= cap)
			return false;
		if (ch == '%') {
			int hi = hexval(in[1]),
			    lo = hi < 0 ? -1 : hexval(in[2]);

			if (lo < 0 || (ch = hi * 16 + lo) == 0 || ch == '/')
				return false;
			in += 2;
		}
		out[n++] = (char)ch;
	}
	out[n] = '\0';
	return n > 0;
}

int
prompts_read_tool(const char *uri, const char **tool, json_t **args)
{
	char v[512];

	*tool = NULL;
	*args = NULL;
	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++) {
		size_t pl = strlen(readers[i].prefix);

		if (strncmp(uri, readers[i].prefix, pl) != 0)
			continue;
		if (!uri_decode(uri + pl, v, sizeof(v)))
			return STATUS_NOTFOUND;
		*args = i == 0 ? json_pack("{s:s, s:s, s:s}", "service", v,
					   "time_range", "1h", "compare_to",
					   "previous")
			       : json_pack("{s:s}", readers[i].arg, v);
		if (*args == NULL)
			return STATUS_NOMEM;
		*tool = readers[i].tool;
		return STATUS_OK;
	}
	return STATUS_NOTFOUND;
}

bool
prompts_template_uri(const char *uri)
{
	for (size_t i = 0; i < sizeof(readers) / sizeof(readers[0]); i++)
		if (strncmp(uri, readers[i].prefix,
			    strlen(readers[i].prefix)) == 0)
			return true;
	return false;
}

/* Listed in the catalog; reads go to the tools (prompts_read_tool). */
static int
read_by_tool(const char *uri, void *arg, json_t **contents)
{
	(void)uri;
	(void)arg;
	*contents = NULL;
	return STATUS_NOTFOUND;
}

static const struct resource_template_def templates[PROMPTS_TEMPLATES] = {
	{.uri_template = "sextant://services/{service}",
	 .name = "service",
	 .title = "Service summary",
	 .description = "A service's requests, errors and P95 over the last "
			"hour against the hour before (query_metrics)",
	 .mime_type = "text/markdown",
	 .read = read_by_tool},
	{.uri_template = "sextant://traces/{trace_id}",
	 .name = "trace",
	 .title = "Trace",
	 .description = "One trace as get_trace shows it: span tree, errors, "
			"bottleneck",
	 .mime_type = "text/markdown",
	 .read = read_by_tool},
	{.uri_template = "sextant://sessions/{session_id}",
	 .name = "session",
	 .title = "GenAI session",
	 .description = "One agent session as get_session shows it: calls, "
			"tokens, cost",
	 .mime_type = "text/markdown",
	 .read = read_by_tool},
};
