/*
 * boot.c - assembles the gateway: builds the shared context from the
 * config (every room's part of it), reloads what may change at run time,
 * runs the once-a-second janitor tick, and tears it down.  The one place
 * that names the tool families (boot_tool_families).  It is a room of its
 * own (server/boot/), above every other: it includes them all, and only
 * main.c includes it.
 */
#include "boot/boot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "base/auth.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"
#include "base/redact.h"
#include "base/seal.h"
#include "conformance/conformance.h"
#include "conformance/tool_conformance_2026.h"
#include "core/instances.h"
#include "core/maintain.h"
#include "core/server.h"
#include "mcp/apps.h"
#include "mcp/call.h"
#include "mcp/catalog.h"
#include "mcp/dispatch.h"
#include "mcp/gateway.h"
#include "mcp/reqmeta.h"
#include "mcp/session.h"
#include "mcp/sessstore.h"
#include "mcp/skills.h"
#include "mcp/tasks.h"
#include "mcp/tools.h"
#include "oauth/oauth.h"
#include "oauth/prm.h"
#include "pg/pg.h"
#include "tools/tool_core.h"
#include "tools/tool_genai.h"
#include "tools/tool_grafana.h"
#include "tools/tool_mesh_ui.h"
#include "tools/tool_mesh_istio.h"
#include "tools/tool_mesh_graph.h"
#include "tools/tool_mesh_resource.h"
#include "tools/tool_mesh_traces.h"
#include "tools/tool_query.h"
#include "tools/tool_spans_services.h"
#include "tools/tool_spans.h"
#include "tools/tool_query_otlp.h"

/* Every tool family's handler table; tools.c binds definitions to them
 * (the tests load the same list). */
const struct tool_handler *const boot_tool_families[] = {
	core_tool_handlers,
	conformance_tool_handlers,
	conformance_2026_tool_handlers, /* test_custom_header */
	query_tool_handlers,
	mesh_ui_tool_handlers, /* get_citations, get_action_ui */
	query_otlp_tool_handlers,
	spans_tool_handlers, /* query_spans, get_trace */
	genai_tool_handlers, /* get_session, analyze_genai, compare_sessions */
	spans_services_tool_handlers, /* list_services */
	grafana_tool_handlers,	      /* query_grafana_metrics */
	mesh_istio_tool_handlers,     /* manage_istio_config */
	mesh_graph_tool_handlers,     /* get_mesh_graph */
	mesh_resource_tool_handlers,  /* get_resource_detail */
	mesh_traces_tool_handlers,    /* get_traces */
	NULL,
};

static double
gauge_requests(void *arg)
{
	struct session_table *t = ((struct server *)arg)->requests;

	return t != NULL ? session_table_count(t) : 0;
}

static double
gauge_sessions(void *arg)
{
	return session_table_count(((struct server *)arg)->sessions);
}

static double
gauge_queue(void *arg)
{
	return pool_queue_depth(((struct server *)arg)->pool);
}

static double
gauge_busy(void *arg)
{
	return pool_busy(((struct server *)arg)->pool);
}

/* The database pool's share of /metrics (0 without a database). */
static struct pg_stats
db_stats(void *arg)
{
	struct pg_stats st = {0};
	struct pg_pool *pg = ((struct server *)arg)->pg;

	if (pg != NULL)
		pg_pool_stats(pg, &st);
	return st;
}

static double
gauge_db_in_use(void *arg)
{
	return db_stats(arg).in_use;
}

static double
gauge_db_waiting(void *arg)
{
	return db_stats(arg).waiting;
}

static double
count_db_timeouts(void *arg)
{
	return (double)db_stats(arg).acquire_timeouts;
}

static double
count_db_refused(void *arg)
{
	return (double)db_stats(arg).acquire_full;
}

static int
init_metrics(struct server *srv)
{
	struct expo *m = srv->expo;
	struct expo_family *f;

	srv->m.http_requests =
		expo_family(m, EXPO_COUNTER, "sextant_http_requests_total",
			    "HTTP requests by route and status code",
			    "route,code", NULL, 0);
	srv->m.rpc_requests = expo_family(
		m, EXPO_COUNTER, "sextant_mcp_requests_total",
		"MCP requests by JSON-RPC method", "method", NULL, 0);
	srv->m.rpc_duration = expo_family(
		m, EXPO_HISTOGRAM, "sextant_mcp_request_duration_seconds",
		"Time from request to response by MCP method", "method", NULL,
		0);
	srv->m.rpc_errors = expo_family(
		m, EXPO_COUNTER, "sextant_mcp_errors_total",
		"JSON-RPC error responses by code", "code", NULL, 0);
	srv->m.tool_calls = expo_family(
		m, EXPO_COUNTER, "sextant_tool_calls_total",
		"Tool calls by tool, outcome (ok, error, invalid, "
		"cancelled, timeout, failed) and client (an access token's "
		"client_id, the first 100 then \"other\"; \"apikey\"; \"\")",
		"tool,outcome,client", NULL, 0);
	srv->m.tool_duration = expo_family(
		m, EXPO_HISTOGRAM, "sextant_tool_call_duration_seconds",
		"Tool call duration by tool", "tool", NULL, 0);
	f = expo_family(m, EXPO_GAUGE, "sextant_inflight_requests",
			"HTTP requests being processed", NULL, NULL, 0);
	srv->m.inflight = expo_series(f, NULL);
	f = expo_family(m, EXPO_GAUGE, "sextant_sse_streams",
			"Open SSE connections", NULL, NULL, 0);
	srv->m.sse_streams = expo_series(f, NULL);
	f = expo_family(m, EXPO_COUNTER, "sextant_config_reloads_total",
			"SIGHUP reloads by result", "result", NULL, 0);
	srv->m.reloads_ok = expo_series(f, (const char *[]){"ok"});
	srv->m.reloads_failed = expo_series(f, (const char *[]){"failed"});
	srv->m.ingest_items = expo_family(
		m, EXPO_COUNTER, "sextant_ingest_items_total",
		"OTLP spans and data points by signal and outcome (stored, "
		"duplicate, rejected, failed)",
		"signal,outcome", NULL, 0);
	if (srv->m.http_requests == NULL || srv->m.rpc_requests == NULL ||
	    srv->m.rpc_duration == NULL || srv->m.rpc_errors == NULL ||
	    srv->m.tool_calls == NULL || srv->m.tool_duration == NULL ||
	    srv->m.inflight == NULL || srv->m.sse_streams == NULL ||
	    srv->m.reloads_ok == NULL || srv->m.reloads_failed == NULL ||
	    srv->m.ingest_items == NULL)
		return STATUS_NOMEM;
	if (expo_gauge_fn(m, "sextant_sessions", "Live MCP sessions",
			  gauge_sessions, srv) != STATUS_OK ||
	    expo_gauge_fn(m, "sextant_stateless_requests",
			  "2026-07-28 requests in flight (running tasks "
			  "included)",
			  gauge_requests, srv) != STATUS_OK ||
	    expo_gauge_fn(m, "sextant_worker_queue_depth",
			  "Tool calls waiting for a worker", gauge_queue,
			  srv) != STATUS_OK ||
	    expo_gauge_fn(m, "sextant_workers_busy",
			  "Workers running a tool call", gauge_busy,
			  srv) != STATUS_OK ||
	    expo_gauge_fn(m, "sextant_db_connections_in_use",
			  "Telemetry database connections leased now",
			  gauge_db_in_use, srv) != STATUS_OK ||
	    expo_gauge_fn(m, "sextant_db_acquire_waiting",
			  "Tool calls and jobs queued for a database "
			  "connection",
			  gauge_db_waiting, srv) != STATUS_OK ||
	    expo_counter_fn(m, "sextant_db_acquire_timeouts_total",
			    "Waits for a database connection that ran out "
			    "of time",
			    count_db_timeouts, srv) != STATUS_OK ||
	    expo_counter_fn(m, "sextant_db_acquire_refused_total",
			    "Waits for a database connection refused: the "
			    "queue was full",
			    count_db_refused, srv) != STATUS_OK)
		return STATUS_NOMEM;
	return STATUS_OK;
}

/* [auth.oauth]: the verifier and the metadata document it is served with
 * (server/http/http.c: the gate and /.well-known/oauth-protected-resource). */
static int
build_oauth(struct server *srv, const struct config *cfg, char *err,
	    size_t errlen)
{
	const struct strlist *as = &cfg->oauth.authorization_servers;
	const char *audience = cfg->oauth.audience[0] != '\0'
				       ? cfg->oauth.audience
				       : cfg->oauth.resource;
	const char *scopes[] = {cfg->oauth.scope_read, cfg->oauth.scope_ingest,
				cfg->oauth.scope_write};
	struct oauth_settings s = {
		.issuer = cfg->oauth.issuer,
		.audience = audience,
		.jwks_uri = cfg->oauth.jwks_uri,
		.algorithms = cfg->oauth.algorithms.v,
		.n_algorithms = cfg->oauth.algorithms.n,
		.accept_generic_typ = cfg->oauth.accept_generic_typ,
		.leeway_s = cfg->oauth.leeway_s,
		.introspection_endpoint = cfg->oauth.introspection_endpoint,
		.introspection_client_id = cfg->oauth.introspection_client_id,
		.introspection_client_secret_file =
			cfg->oauth.introspection_client_secret_file,
		.introspection_cache_s = cfg->oauth.introspection_cache_s,
		.cache_entries = (size_t)cfg->oauth.cache_entries,
		.jwks_refetch_s = cfg->oauth.jwks_refetch_s,
		.timeout_ms = cfg->oauth.timeout_ms,
		.ca_file = cfg->oauth.ca_file,
	};
	struct prm_info pi = {
		.resource = cfg->oauth.resource,
		.auth_servers =
			as->n > 0 ? (const char *const *)as->v
				  : (const char *const[]){cfg->oauth.issuer},
		.n_auth_servers = as->n > 0 ? as->n : 1,
		.scopes = scopes,
		.n_scopes = 3,
		.resource_documentation = cfg->oauth.resource_documentation,
	};
	char why[512];
	json_t *doc;

	if (!cfg->oauth.enabled)
		return STATUS_OK;
	if (prm_url(cfg->oauth.resource, srv->oauth_prm_url,
		    sizeof(srv->oauth_prm_url)) != STATUS_OK) {
		snprintf(err, errlen,
			 "auth.oauth.resource: expected Sextant's absolute "
			 "http(s) URL as clients reach /mcp "
			 "(\"https://sextant.example.com/mcp\")");
		return STATUS_INVALID;
	}
	if (oauth_new(&s, &srv->oauth, why, sizeof(why)) != STATUS_OK) {
		snprintf(err, errlen, "auth.oauth: %s", why);
		return STATUS_INVALID;
	}
	if ((doc = prm_document(&pi)) == NULL ||
	    (srv->oauth_prm = json_dumps(doc, JSON_COMPACT)) == NULL) {
		json_decref(doc);
		snprintf(err, errlen, "out of memory");
		return STATUS_NOMEM;
	}
	json_decref(doc);
	return STATUS_OK;
}

static int
build_keys(const struct config *cfg, struct auth_keys **out,
	   struct auth_keys **ingest, char *err, size_t errlen)
{
	char why[512];

	*ingest = NULL;
	if (auth_keys_new(cfg->auth.keys.v, cfg->auth.keys.n, out, why,
			  sizeof(why)) != STATUS_OK) {
		snprintf(err, errlen, "auth.keys: %s", why);
		return STATUS_INVALID;
	}
	if (auth_keys_new(cfg->ingest.keys.v, cfg->ingest.keys.n, ingest, why,
			  sizeof(why)) != STATUS_OK) {
		snprintf(err, errlen, "ingest.keys: %s", why);
		auth_keys_free(*out);
		*out = NULL;
		return STATUS_INVALID;
	}
	return STATUS_OK;
}

/* The requestState sealing key: SHA-256 of the secret in path (replicas
 * share it), or random when path is "". */
static int
state_key(struct server *srv, const char *path, char *err, size_t errlen)
{
	unsigned char secret[4096], key[SHA256_DIGEST_LENGTH];
	size_t n = 0;
	FILE *f;
	int rc;

	if (path[0] == '\0') {
		rc = seal_new(NULL, &srv->seal);
		if (rc != STATUS_OK)
			snprintf(err, errlen,
				 "cannot create the request-state key: %s",
				 status_str(rc));
		return rc;
	}
	f = fopen(path, "rb");
	if (f != NULL) {
		n = fread(secret, 1, sizeof(secret), f);
		fclose(f);
	}
	if (f == NULL || n < 32 || n == sizeof(secret)) {
		snprintf(err, errlen,
			 "server.state_key_file %s: %s; it must hold a secret "
			 "of 32 to 4095 bytes (e.g. head -c 48 /dev/urandom | "
			 "base64 > FILE)",
			 path, f == NULL ? strerror(errno) : "wrong size");
		OPENSSL_cleanse(secret, sizeof(secret));
		return STATUS_INVALID;
	}
	SHA256(secret, n, key);
	OPENSSL_cleanse(secret, sizeof(secret));
	rc = seal_new(key, &srv->seal);
	OPENSSL_cleanse(key, sizeof(key));
	if (rc != STATUS_OK)
		snprintf(err, errlen, "cannot create the request-state key");
	return rc;
}

int
boot_init(struct server *srv, struct config *cfg, const char *config_path,
	  char *err, size_t errlen)
{
	struct session_limits lim = {
		.max_sessions = cfg->server.max_sessions,
		.idle_timeout_s = cfg->server.session_idle_timeout_s,
		.max_streams = cfg->server.max_streams_per_session,
		.replay_events = (size_t)cfg->server.sse_replay_events,
		.replay_bytes = (size_t)cfg->server.sse_replay_bytes,
		.retry_ms = cfg->server.sse_retry_ms,
		.keepalive_s = cfg->server.sse_keepalive_s,
		.cache_idle_s = cfg->sessions.cache_idle_s,
		.dirty = sessstore_stream_dirty,
	};
	char why[512];
	int rc;

	memset(srv, 0, sizeof(*srv));
	srv->cfg = cfg;
	srv->config_path = config_path;
	srv->tick = boot_tick;
	srv->reload = boot_reload;
	srv->started_ms = clock_mono_ms();
	atomic_init(&srv->draining, false);
	pthread_rwlock_init(&srv->live_lock, NULL);
	log_set_level((enum log_level)cfg->log.level);
	if ((rc = expo_new(&srv->expo)) != STATUS_OK ||
	    (rc = init_metrics(srv)) != STATUS_OK) {
		snprintf(err, errlen, "out of memory creating metrics");
		return rc;
	}
	if ((rc = session_table_new(&lim, &srv->sessions)) != STATUS_OK) {
		snprintf(err, errlen, "out of memory creating sessions");
		return rc;
	}
	/* one per 2026-07-28 request in flight, and per running task */
	lim.max_sessions = cfg->server.max_connections + TASKS_MAX;
	lim.idle_timeout_s = 0;
	if ((rc = session_table_new(&lim, &srv->requests)) != STATUS_OK) {
		snprintf(err, errlen, "out of memory creating sessions");
		return rc;
	}
	if ((rc = tasks_new(&srv->tasks)) != STATUS_OK) {
		snprintf(err, errlen, "out of memory creating the task table");
		return rc;
	}
	if ((rc = state_key(srv, cfg->server.state_key_file, err, errlen)) !=
	    STATUS_OK)
		return rc;
	if ((rc = pool_new(cfg->workers.threads, cfg->workers.queue_size,
			   &srv->pool)) != STATUS_OK) {
		snprintf(err, errlen, "cannot start %d worker threads: %s",
			 cfg->workers.threads, status_str(rc));
		return rc;
	}
	if ((rc = tools_load(boot_tool_families, cfg, &srv->tools, err,
			     errlen)) != STATUS_OK)
		return rc;
	if ((rc = build_keys(cfg, &srv->keys, &srv->ingest_keys, err,
			     errlen)) != STATUS_OK)
		return rc;
	if ((rc = build_oauth(srv, cfg, err, errlen)) != STATUS_OK)
		return rc;
	if ((rc = redact_new((const char *const *)cfg->redact.keys.v,
			     cfg->redact.keys.n,
			     (const char *const *)cfg->redact.values.v,
			     cfg->redact.values.n, cfg->redact.emails,
			     &srv->redact, why, sizeof(why))) != STATUS_OK) {
		/* "redact.keys: more than 256 patterns; merge them" */
		snprintf(err, errlen, "redact.%s", why);
		return rc;
	}
	srv->source_rules = otlp_default_source_rules;
	if (cfg->ingest.ebpf_sdk_names.n > 0) {
		srv->source_rules.sdk_names =
			(const char *const *)cfg->ingest.ebpf_sdk_names.v;
		srv->source_rules.n_sdk_names = cfg->ingest.ebpf_sdk_names.n;
	}
	if (cfg->ingest.ebpf_scope_prefixes.n > 0) {
		srv->source_rules.scope_prefixes =
			(const char *const *)cfg->ingest.ebpf_scope_prefixes.v;
		srv->source_rules.n_scope_prefixes =
			cfg->ingest.ebpf_scope_prefixes.n;
	}
	if (cfg->database.url[0] != '\0') {
		struct pg_pool_config pc = {
			.conninfo = cfg->database.url,
			.size = cfg->database.pool_size,
			.queue_max = cfg->database.acquire_queue,
			.statement_timeout_ms =
				cfg->database.statement_timeout_ms,
		};
		struct pg_error perr;

		if ((rc = pg_pool_new(&pc, &srv->pg, &perr)) != STATUS_OK) {
			snprintf(err, errlen, "database: %s (%s)", perr.client,
				 perr.detail);
			return rc;
		}
	}
	if ((rc = instances_init(srv, err, errlen)) != STATUS_OK)
		return rc;
	if ((rc = catalog_new(&srv->catalog)) != STATUS_OK) {
		snprintf(err, errlen, "out of memory creating the catalog");
		return rc;
	}
	/* With the fixtures on, the catalog holds only them (the suite
	 * checks every entry, MCP-DIGEST G11). */
	rc = cfg->conformance.enabled
		     ? conformance_register_catalog(srv->catalog)
		     : gateway_register_catalog(srv);
	if (rc == STATUS_OK)
		rc = skills_register_catalog(srv->catalog);
	if (rc == STATUS_OK && !cfg->conformance.enabled)
		rc = apps_register_catalog(srv->catalog);
	if (rc != STATUS_OK) {
		snprintf(err, errlen, "cannot register resources: %s",
			 status_str(rc));
		return rc;
	}
	return STATUS_OK;
}

void
boot_free(struct server *srv)
{
	if (srv->sessions != NULL)
		session_table_close_all(srv->sessions);
	if (srv->requests != NULL)
		session_table_close_all(srv->requests);
	pool_free(srv->pool); /* runs what is queued: sessions are closed */
	sessstore_free(srv->store); /* after the workers: none adds jobs */
	session_table_free(srv->sessions);
	session_table_free(srv->requests);
	tasks_free(srv->tasks); /* after the pool: no call runs */
	seal_free(srv->seal);
	tools_unref(srv->tools);
	auth_keys_free(srv->keys);
	auth_keys_free(srv->ingest_keys);
	oauth_free(srv->oauth);
	free(srv->oauth_prm);
	redact_free(srv->redact);
	pg_pool_free(srv->pg);
	instances_free(srv);
	expo_free(srv->expo);
	config_free(srv->cfg);
	free(srv->last_status);
	catalog_free(srv->catalog);
	pthread_rwlock_destroy(&srv->live_lock);
	memset(srv, 0, sizeof(*srv));
}

void
boot_reload(struct server *srv)
{
	struct config *cfg = NULL;
	struct config_error cerr;
	struct tools *tools = NULL, *old_tools;
	struct auth_keys *keys = NULL, *old_keys;
	struct auth_keys *ikeys = NULL, *old_ikeys;
	char err[1024], diff[512];
	bool changed;
	struct log_fields f = {.duration_ms = -1};

	if (config_load(srv->config_path, NULL, &cfg, &cerr) != STATUS_OK) {
		config_error_format(&cerr, err, sizeof(err));
		log_error(&f, "reload failed, keeping the running config: %s",
			  err);
		expo_inc(srv->m.reloads_failed);
		return;
	}
	if (tools_load(boot_tool_families, cfg, &tools, err, sizeof(err)) !=
		    STATUS_OK ||
	    build_keys(cfg, &keys, &ikeys, err, sizeof(err)) != STATUS_OK) {
		log_error(&f, "reload failed, keeping the running config: %s",
			  err);
		expo_inc(srv->m.reloads_failed);
		tools_unref(tools);
		config_free(cfg);
		return;
	}
	if (config_diff_nonreloadable(srv->cfg, cfg, diff, sizeof(diff)) > 0)
		log_warn(&f, "restart needed for %s (kept the running values)",
			 diff);
	log_set_level((enum log_level)cfg->log.level);
	pthread_rwlock_wrlock(&srv->live_lock);
	old_tools = srv->tools;
	old_keys = srv->keys;
	old_ikeys = srv->ingest_keys;
	srv->tools = tools;
	srv->keys = keys;
	srv->ingest_keys = ikeys;
	pthread_rwlock_unlock(&srv->live_lock);
	changed = !tools_same(old_tools, tools);
	tools_unref(old_tools);
	auth_keys_free(old_keys);
	auth_keys_free(old_ikeys);
	config_free(cfg);
	expo_inc(srv->m.reloads_ok);
	log_info(&f, "config reloaded%s",
		 changed ? "; the tool set changed, clients notified" : "");
	if (changed)
		dispatch_notify_tools_changed(srv);
}

static void
tick_session(struct session *s, void *arg)
{
	struct server *srv = arg;

	call_expire_session(s, srv->cfg->workers.call_timeout_s,
			    clock_mono_ms());
}

/* Tells subscribers of the status resource when its content changed. */
static void
watch_status(struct server *srv)
{
	json_t *contents = NULL;
	char *text;

	if (srv->cfg->conformance.enabled ||
	    catalog_read(srv->catalog, GATEWAY_STATUS_URI, &contents) !=
		    STATUS_OK)
		return;
	text = json_dumps(contents, JSON_COMPACT);
	json_decref(contents);
	if (text == NULL)
		return;
	if (srv->last_status != NULL && strcmp(srv->last_status, text) != 0)
		dispatch_resource_updated(srv, GATEWAY_STATUS_URI);
	free(srv->last_status);
	srv->last_status = text;
}

void
boot_tick(struct server *srv)
{
	session_table_sweep(srv->sessions, clock_mono_ms());
	session_table_foreach(srv->sessions, tick_session, srv);
	sessstore_tick(srv->store, clock_mono_ms());
	session_table_sweep(srv->requests, clock_mono_ms());
	session_table_foreach(srv->requests, tick_session, srv);
	tasks_sweep(srv->tasks, clock_wall_ms());
	watch_status(srv);
	maintain_tick(srv);
}

static int
cmp_revision(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void
boot_revisions(char *buf, size_t buflen)
{
	/* Revisions are dates (YYYY-MM-DD): sorting the strings sorts them
	 * in time. */
	const char *all[16];
	const char *const *tables[] = {dispatch_versions, reqmeta_versions};
	size_t n = 0, used = 0;

	for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		for (size_t i = 0;
		     tables[t][i] != NULL && n < sizeof(all) / sizeof(all[0]);
		     i++)
			all[n++] = tables[t][i];
	qsort(all, n, sizeof(all[0]), cmp_revision);
	if (buflen == 0)
		return;
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(all[i]) + (used > 0);

		if (i > 0 && strcmp(all[i], all[i - 1]) == 0)
			continue;
		if (used + len >= buflen)
			break;
		snprintf(buf + used, buflen - used, "%s%s", used > 0 ? " " : "",
			 all[i]);
		used += len;
	}
}
