/*
 * config.c - the configuration table and everything it drives.
 *
 * One static table lists every key with its type, default, bounds, flags
 * and doc line.  Defaults, TOML loading, environment overrides, printing,
 * the example file and reload checks all walk that table, so a new key is
 * one line here plus its field in config.h.
 */
#include "conf/config.h"
#include "base/strdist.h"
#include "prom/promql.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/redact.h"
#include "conf/toml.h"

enum key_type {
	KT_STRING,
	KT_INT,	  /* int field */
	KT_INT64, /* int64_t field */
	KT_BOOL,
	KT_LIST, /* struct strlist, TOML array of strings */
	KT_LOGLEVEL,
	KT_PCT, /* double field, a percentage from 0 to 100 */
};

enum {
	K_SECRET = 1 << 0, /* never printed or echoed in messages */
	K_RELOAD = 1 << 1, /* applied by a SIGHUP reload */
};

/* Extra check on a string value or list item; fills msg on failure. */
typedef bool (*check_fn)(const char *s, char *msg, size_t len);

struct key_def {
	const char *table; /* "server", "server.tls" */
	const char *name;
	enum key_type type;
	size_t off;	   /* offset of the field in struct config */
	const char *def_s; /* default of strings and the log level */
	int64_t def_i;	   /* default of integers and booleans */
	int64_t min, max;
	unsigned flags;
	check_fn check;
	const char *doc;
	double def_r; /* default of percentages */
};

static bool check_listen(const char *s, char *msg, size_t len);
static bool check_key_hash(const char *s, char *msg, size_t len);
static bool check_api_key(const char *s, char *msg, size_t len);
static bool check_timescaledb(const char *s, char *msg, size_t len);
static bool check_session_store(const char *s, char *msg, size_t len);
static bool check_regex(const char *s, char *msg, size_t len);
static bool check_redact_key(const char *s, char *msg, size_t len);
static bool check_link_url(const char *s, char *msg, size_t len);
static bool check_oauth_alg(const char *s, char *msg, size_t len);

#define KUBE_SA_TOKEN "/var/run/secrets/kubernetes.io/serviceaccount/token"
#define OFF(f)	      offsetof(struct config, f)
#define STR(t, n, f, def, fl, chk, doc)                                        \
	{                                                                      \
		t, n, KT_STRING, OFF(f), def, 0, 0, 0, fl, chk, doc            \
	}
#define INT(t, n, f, def, lo, hi, doc)                                         \
	{                                                                      \
		t, n, KT_INT, OFF(f), NULL, def, lo, hi, 0, NULL, doc          \
	}
#define PCT(t, n, f, def, doc)                                                 \
	{                                                                      \
		t, n, KT_PCT, OFF(f), NULL, 0, 0, 100, 0, NULL, doc, def       \
	}
#define INT64(t, n, f, def, lo, hi, doc)                                       \
	{                                                                      \
		t, n, KT_INT64, OFF(f), NULL, def, lo, hi, 0, NULL, doc        \
	}
#define BOOL(t, n, f, def, doc)                                                \
	{                                                                      \
		t, n, KT_BOOL, OFF(f), NULL, def, 0, 1, 0, NULL, doc           \
	}
#define LIST(t, n, f, fl, chk, doc)                                            \
	{                                                                      \
		t, n, KT_LIST, OFF(f), NULL, 0, 0, 0, fl, chk, doc             \
	}
/* A list with a default: its items comma-separated in def. */
#define LISTD(t, n, f, def, fl, chk, doc)                                      \
	{                                                                      \
		t, n, KT_LIST, OFF(f), def, 0, 0, 0, fl, chk, doc              \
	}

/* Keys of one table are contiguous: printing emits a header per run. */
static const struct key_def keys[] = {
	STR("server", "listen", server.listen, "127.0.0.1:8080", 0,
	    check_listen,
	    "Address to listen on: \"host:port\" or \"[ipv6]:port\"; "
	    "SEXTANT_LISTEN also sets it."),
	INT("server", "threads", server.threads, 0, 0, 64,
	    "HTTP polling threads (epoll); 0 = one per CPU."),
	INT64("server", "max_body_bytes", server.max_body_bytes, 4194304, 1024,
	      1073741824,
	      "Largest request body accepted; larger ones get 413."),
	INT64("server", "max_header_bytes", server.max_header_bytes, 16384,
	      4096, 1048576,
	      "Memory per HTTP connection for the request line and headers."),
	INT("server", "connection_timeout_s", server.connection_timeout_s, 60,
	    1, 86400, "Seconds an idle HTTP connection is kept open."),
	INT("server", "max_connections", server.max_connections, 1024, 1,
	    100000,
	    "Concurrent HTTP connections; past it a new one closes the "
	    "one idle the longest (503 when none is idle)."),
	INT("server", "max_sessions", server.max_sessions, 10000, 1, 1000000,
	    "Live MCP sessions (shared ones: stored by all the gateways "
	    "sharing the database); new ones beyond this are refused (503 "
	    "with Retry-After)."),
	INT("server", "session_idle_timeout_s", server.session_idle_timeout_s,
	    1800, 10, 604800,
	    "Seconds after which an idle MCP session expires."),
	INT("server", "max_streams_per_session", server.max_streams_per_session,
	    8, 1, 256, "Concurrent SSE streams per MCP session."),
	INT("server", "list_page_size", server.list_page_size, 100, 1, 1000,
	    "Items per page of tools/list, resources/list and prompts/list."),
	INT("server", "sse_keepalive_s", server.sse_keepalive_s, 15, 1, 3600,
	    "Seconds between keepalive comments on an idle SSE stream."),
	INT("server", "sse_retry_ms", server.sse_retry_ms, 1000, 0, 600000,
	    "Reconnect delay sent to SSE clients (retry field), in "
	    "milliseconds."),
	INT("server", "sse_replay_events", server.sse_replay_events, 256, 1,
	    100000,
	    "Events kept per SSE stream for resumption with Last-Event-ID."),
	INT64("server", "sse_replay_bytes", server.sse_replay_bytes, 1048576,
	      1024, 1073741824,
	      "Bytes kept per SSE stream for resumption with Last-Event-ID."),
	INT("server", "shutdown_grace_s", server.shutdown_grace_s, 10, 0, 3600,
	    "Seconds in-flight calls get to finish after SIGTERM; those "
	    "still running are answered \"cancelled by shutdown\"."),
	LIST("server", "allowed_origins", server.allowed_origins, 0, NULL,
	     "Origin header values accepted; loopback origins are accepted "
	     "when listening on loopback."),
	LIST("server", "allowed_hosts", server.allowed_hosts, 0, NULL,
	     "Host header values accepted; loopback names are accepted when "
	     "listening on loopback."),
	STR("server", "state_key_file", server.state_key_file, "", 0, NULL,
	    "File holding the secret (at least 32 bytes) that seals the "
	    "requestState of 2026-07-28 input_required rounds; replicas "
	    "behind one load balancer must share it.  Empty: a random key "
	    "per process, so a retry must reach the same replica."),
	STR("server.tls", "cert", server.tls_cert, "", 0, NULL,
	    "PEM certificate file for HTTPS; empty = plain HTTP."),
	STR("server.tls", "key", server.tls_key, "", 0, NULL,
	    "PEM private key file for HTTPS; set together with cert."),
	INT("workers", "threads", workers.threads, 8, 1, 1024,
	    "Threads that run tool calls."),
	INT("workers", "queue_size", workers.queue_size, 256, 1, 1000000,
	    "Tool calls waiting for a worker; beyond this new calls get 503."),
	INT("workers", "call_timeout_s", workers.call_timeout_s, 300, 1, 86400,
	    "Hard limit on one tool call, in seconds."),
	INT("workers", "client_request_timeout_s",
	    workers.client_request_timeout_s, 60, 1, 3600,
	    "Seconds to wait for a client to answer a sampling, elicitation or "
	    "roots request."),
	LIST("auth", "keys", auth.keys, K_SECRET | K_RELOAD, check_api_key,
	     "Hashes of accepted API keys (\"sha256:<64 hex>\", from "
	     "`sextant hash-key`), each optionally followed by the scopes the "
	     "key carries (\"sha256:<64 hex> sextant:read sextant:ingest\"; "
	     "none named: every scope); empty = no authentication."),
	{"log", "level", KT_LOGLEVEL, OFF(log.level), "info", 0, 0, 0, K_RELOAD,
	 NULL, "Log level: \"debug\", \"info\", \"warn\" or \"error\"."},
	LIST("tools", "enabled_sets", tools.enabled_sets, K_RELOAD, NULL,
	     "Tool sets to enable; empty = the default sets: every set but "
	     "\"conformance\", \"ebpf\" (the source-specific eBPF tools), "
	     "\"kiali\" (get_citations, get_action_ui: for a Kiali-style "
	     "chat UI) and \"istio\" (manage_istio_config), which is "
	     "listed by default only with [kubernetes] api_url or in a pod."),
	LIST("tools", "disabled", tools.disabled, K_RELOAD, NULL,
	     "Tool names to disable."),
	INT("tools", "max_answer_chars", tools.max_answer_chars, 16000, 1000,
	    1000000,
	    "Most characters of text a tool answer carries; tools fit their "
	    "answers to it (\"N more\", cursors) and anything longer is cut."),
	INT("tools", "max_answer_bytes", tools.max_answer_bytes, 32768, 4096,
	    16777216,
	    "Most bytes of a whole tool answer as JSON, its text and its "
	    "structuredContent together: past it the structured rows are cut, "
	    "the largest list first, and the answer says how many are shown "
	    "and how many more there are.  At least max_answer_chars."),
	{"tools", "deprecated_aliases", KT_BOOL, OFF(tools.deprecated_aliases),
	 NULL, 0, 0, 1, K_RELOAD, NULL,
	 "Also list the deprecated tool names (query_beyla_*) of older "
	 "releases; they work either way."},
	LISTD("redact", "keys", redact.keys,
	      "authorization,password,passwd,secret,token,api_key,cookie,"
	      "set-cookie",
	      0, check_redact_key,
	      "Attributes whose keys contain one of these show their values "
	      "as [REDACTED] in every tool answer: case-insensitive, '-' and "
	      "'_' alike (\"api_key\" hides X-Api-Key and openai.api_key)."),
	LIST("redact", "values", redact.values, 0, check_regex,
	     "POSIX extended regular expressions (case-insensitive) whose "
	     "matches inside span values and messages show as [REDACTED], "
	     "e.g. \"sk-[a-z0-9]{20,}\"; start each with literal text to keep "
	     "matching fast.  The environment form splits at commas."),
	BOOL("redact", "emails", redact.emails, true,
	     "Also show e-mail addresses inside span values and messages as "
	     "[REDACTED]."),
	BOOL("conformance", "enabled", conformance.enabled, false,
	     "Register the MCP conformance-suite fixtures (test runs only)."),
	STR("database", "url", database.url, "", K_SECRET, NULL,
	    "libpq connection string (\"postgresql://user@host/db\"); "
	    "DATABASE_URL also sets it."),
	INT("database", "pool_size", database.pool_size, 4, 1, 256,
	    "Postgres connections kept open."),
	INT("database", "acquire_queue", database.acquire_queue, 0, 0, 4096,
	    "Tool calls and jobs that may wait at once for a connection "
	    "(first come, first served, each up to its own deadline); more "
	    "fail at once.  0: 8 per connection."),
	INT("database", "statement_timeout_ms", database.statement_timeout_ms,
	    30000, 1, 3600000,
	    "Postgres statement_timeout for each query, in milliseconds."),
	BOOL("database", "auto_migrate", database.auto_migrate, true,
	     "Apply pending schema migrations at startup."),
	INT("database", "retention_days", database.retention_days, 7, 1, 3650,
	    "Days of spans and metric points kept; older ones are dropped."),
	STR("database", "timescaledb", database.timescaledb, "auto", 0,
	    check_timescaledb,
	    "Store spans and metric points in TimescaleDB hypertables: "
	    "\"auto\" (when CREATE EXTENSION timescaledb works), \"on\" "
	    "(required) or \"off\" (native daily partitions).  Chosen "
	    "when the store is created."),
	INT("database", "partition_days_ahead", database.partition_days_ahead,
	    3, 0, 366,
	    "Daily partitions created ahead of today (without TimescaleDB)."),
	INT("database", "maintain_interval_s", database.maintain_interval_s,
	    3600, 60, 86400,
	    "Seconds between partition upkeep runs (create upcoming days, "
	    "drop expired ones) while serving."),
	STR("sessions", "store", sessions.store, "auto", 0, check_session_store,
	    "Where MCP sessions (2025 revisions, Streamable HTTP) live: "
	    "\"database\" stores them in PostgreSQL so that every gateway "
	    "sharing the database serves every session (replicas behind a "
	    "load balancer, no sticky routing); \"memory\" keeps them in "
	    "this process; \"auto\" = database when database.url is set.  "
	    "The database role needs INSERT, UPDATE and DELETE on the mcp_* "
	    "tables."),
	INT("sessions", "store_threads", sessions.store_threads, 2, 1, 16,
	    "Threads (each with its own database connection) that load, "
	    "create, change and stream shared sessions."),
	INT("sessions", "store_timeout_ms", sessions.store_timeout_ms, 2000,
	    100, 60000,
	    "Longest wait for the session store before a request is answered "
	    "503 with Retry-After."),
	INT("sessions", "replica_timeout_s", sessions.replica_timeout_s, 5, 2,
	    300,
	    "Seconds without a heartbeat after which a gateway counts as "
	    "dead and another ends its unanswered requests."),
	INT("sessions", "cache_idle_s", sessions.cache_idle_s, 60, 5, 86400,
	    "Seconds an unused shared session keeps its SSE streams in this "
	    "gateway's memory (they stay in the database); a compact copy "
	    "stays until server.session_idle_timeout_s, to answer while the "
	    "database is down."),
	INT("sessions", "stream_keep_s", sessions.stream_keep_s, 300, 10, 86400,
	    "Seconds a finished SSE stream of a shared session is kept for "
	    "Last-Event-ID replay."),
	BOOL("ingest", "enabled", ingest.enabled, true,
	     "Accept OTLP/HTTP (JSON or protobuf) on /v1/traces and "
	     "/v1/metrics."),
	LIST("ingest", "keys", ingest.keys, K_SECRET | K_RELOAD, check_key_hash,
	     "Hashes of API keys accepted on the OTLP endpoints (separate "
	     "from [auth] keys); empty = no key needed."),
	INT64("ingest", "max_body_bytes", ingest.max_body_bytes, 16777216, 1024,
	      1073741824,
	      "Largest OTLP request body as sent, in bytes (413 beyond)."),
	INT64("ingest", "max_decompressed_bytes", ingest.max_decompressed_bytes,
	      67108864, 1024, 4294967296LL,
	      "Largest OTLP body after gzip, in bytes: stops gzip bombs."),
	INT("ingest", "max_items", ingest.max_items, 200000, 1, 10000000,
	    "Spans or data points in one OTLP request."),
	LIST("ingest", "ebpf_sdk_names", ingest.ebpf_sdk_names, 0, NULL,
	     "telemetry.sdk.name values that mark spans as seen by eBPF; "
	     "empty = \"beyla\", \"opentelemetry-ebpf-instrumentation\"."),
	LIST("ingest", "ebpf_scope_prefixes", ingest.ebpf_scope_prefixes, 0,
	     NULL,
	     "Scope-name prefixes that mark eBPF spans; empty = "
	     "\"github.com/grafana/beyla\", \"go.opentelemetry.io/obi\"."),
	PCT("health", "error_degraded", health.error_degraded, 0,
	    "Request health: a service or call whose error rate (HTTP 5xx, "
	    "server-side gRPC codes, span status ERROR) is above 0 and at "
	    "least this percentage is DEGRADED (Kiali's default: any error)."),
	PCT("health", "error_unhealthy", health.error_unhealthy, 10,
	    "Error rate, in percent, from which it is UNHEALTHY."),
	PCT("health", "client_error_degraded", health.client_error_degraded, 10,
	    "Client-error rate (HTTP 4xx on servers, gRPC codes such as "
	    "UNAUTHENTICATED or NOT_FOUND), in percent, from which it is "
	    "DEGRADED."),
	PCT("health", "client_error_unhealthy", health.client_error_unhealthy,
	    20, "Client-error rate, in percent, from which it is UNHEALTHY."),
	STR("links", "grafana_url", links.grafana_url, "", 0, check_link_url,
	    "Grafana for get_action_ui (\"https://grafana.example.com\"): "
	    "a service's view opens Explore with its TraceQL query; \"\" = "
	    "no Grafana link."),
	STR("links", "grafana_datasource", links.grafana_datasource, "", 0,
	    NULL,
	    "Uid of the Tempo data source Explore opens; \"\" = Grafana's "
	    "default data source."),
	STR("links", "kiali_url", links.kiali_url, "", 0, check_link_url,
	    "Kiali with its web root (\"https://kiali.example.com/kiali\") "
	    "for get_action_ui's links to its console; \"\" = none."),
	STR("links", "jaeger_url", links.jaeger_url, "", 0, check_link_url,
	    "Jaeger UI (\"https://jaeger.example.com\") for get_action_ui's "
	    "trace search of a service; \"\" = none."),
	STR("kubernetes", "api_url", kubernetes.api_url, "", 0, NULL,
	    "The Kubernetes API server manage_istio_config reaches (https://"
	    "host:port); empty = in-cluster, from KUBERNETES_SERVICE_HOST and "
	    "KUBERNETES_SERVICE_PORT with the pod's service account."),
	STR("kubernetes", "token_file", kubernetes.token_file, "", 0, NULL,
	    "File holding the bearer token, re-read for each request; empty "
	    "= the service account's token (" KUBE_SA_TOKEN "), if any."),
	STR("kubernetes", "ca_file", kubernetes.ca_file, "", 0, NULL,
	    "PEM CA bundle that signed the API server's certificate; empty = "
	    "the service account's ca.crt in a pod, else the system's store."),
	INT("kubernetes", "timeout_ms", kubernetes.timeout_ms, 10000, 100,
	    300000, "One request to the Kubernetes API, connect included."),
	BOOL("kubernetes", "allow_writes", kubernetes.allow_writes, false,
	     "Let manage_istio_config create, patch and delete objects "
	     "(each confirmed first, and logged with the caller); reads need "
	     "no permission."),
	LISTD("kubernetes", "allowed_groups", kubernetes.allowed_groups,
	      "networking.istio.io,security.istio.io,telemetry.istio.io,"
	      "extensions.istio.io,gateway.networking.k8s.io",
	      0, NULL,
	      "API groups manage_istio_config reads and writes: Istio's and "
	      "the Gateway API's."),
	LIST("kubernetes", "allowed_kinds", kubernetes.allowed_kinds, 0, NULL,
	     "Kinds that may be written (\"VirtualService\"); empty = any "
	     "kind of the allowed groups."),
	LIST("kubernetes", "allowed_namespaces", kubernetes.allowed_namespaces,
	     0, NULL, "Namespaces that may be written; empty = any."),
	LIST("rest", "allowed_origins", rest.allowed_origins, 0, NULL,
	     "Browser origins (\"https://ui.example.com\") the REST facade "
	     "(/api/) answers with CORS headers; other origins get none."),
	BOOL("auth.oauth", "enabled", oauth.enabled, false,
	     "Accept OAuth 2.1 access tokens from the issuer below (MCP "
	     "authorization: Sextant is the resource server)."),
	STR("auth.oauth", "resource", oauth.resource, "", 0, NULL,
	    "Sextant's canonical URL as clients reach it "
	    "(\"https://sextant.example.com/mcp\"): the resource of the "
	    "protected resource metadata, and the audience tokens must name."),
	STR("auth.oauth", "issuer", oauth.issuer, "", 0, NULL,
	    "The authorization server's issuer URL; tokens' iss must equal "
	    "it, and its metadata is found from it (RFC 8414, then OpenID "
	    "discovery)."),
	LIST("auth.oauth", "authorization_servers", oauth.authorization_servers,
	     0, NULL,
	     "Issuers listed in the protected resource metadata; empty = "
	     "[issuer]."),
	STR("auth.oauth", "jwks_uri", oauth.jwks_uri, "", 0, NULL,
	    "The issuer's signing keys (JWKS URL); empty = the jwks_uri of its "
	    "metadata."),
	STR("auth.oauth", "audience", oauth.audience, "", 0, NULL,
	    "What a token's aud must contain, compared exactly; empty = "
	    "resource."),
	LISTD("auth.oauth", "algorithms", oauth.algorithms,
	      "RS256,RS384,RS512,PS256,ES256,ES384", 0, check_oauth_alg,
	      "Signature algorithms accepted (RS*, PS*, ES*); \"none\" and "
	      "HS* never are."),
	BOOL("auth.oauth", "accept_generic_typ", oauth.accept_generic_typ,
	     false,
	     "Also accept access tokens typed \"JWT\" or untyped (Keycloak, "
	     "Auth0, Entra ID); RFC 9068 asks for \"at+jwt\"."),
	INT("auth.oauth", "leeway_s", oauth.leeway_s, 60, 0, 600,
	    "Clock skew allowed on exp, nbf and iat, in seconds."),
	INT("auth.oauth", "jwks_refetch_s", oauth.jwks_refetch_s, 30, 1, 86400,
	    "An unknown key id refetches the JWKS at most once per this many "
	    "seconds; the last good keys stay while the issuer is down."),
	INT("auth.oauth", "timeout_ms", oauth.timeout_ms, 5000, 100, 60000,
	    "One request to the authorization server (metadata, JWKS, "
	    "introspection)."),
	STR("auth.oauth", "ca_file", oauth.ca_file, "", 0, NULL,
	    "PEM CA bundle for the authorization server; empty = the "
	    "system's store."),
	STR("auth.oauth", "introspection_endpoint",
	    oauth.introspection_endpoint, "", 0, NULL,
	    "RFC 7662 introspection URL for opaque (non-JWT) tokens; empty = "
	    "opaque tokens are refused."),
	STR("auth.oauth", "introspection_client_id",
	    oauth.introspection_client_id, "", 0, NULL,
	    "Sextant's client id at the introspection endpoint (HTTP Basic)."),
	STR("auth.oauth", "introspection_client_secret_file",
	    oauth.introspection_client_secret_file, "", 0, NULL,
	    "File holding that client's secret (one line)."),
	INT("auth.oauth", "introspection_cache_s", oauth.introspection_cache_s,
	    60, 0, 3600,
	    "Seconds an active introspection answer is reused (at most until "
	    "the token's exp): how long a revoked token may still pass."),
	INT("auth.oauth", "cache_entries", oauth.cache_entries, 4096, 0,
	    1000000,
	    "Verified tokens remembered by SHA-256 until they expire, so a "
	    "repeated token costs a lookup."),
	STR("auth.oauth", "scope_read", oauth.scope_read, "sextant:read", 0,
	    NULL,
	    "Scope for tools, resources, prompts and REST reads.  In URI form "
	    "(\"api://<app id>/sextant.read\", as Entra ID is asked for it) a "
	    "token holding its last segment (Entra's scp) holds it too; so for "
	    "every scope."),
	STR("auth.oauth", "scope_ingest", oauth.scope_ingest, "sextant:ingest",
	    0, NULL, "Scope for OTLP ingest."),
	STR("auth.oauth", "scope_write", oauth.scope_write, "sextant:write", 0,
	    NULL, "Scope for the tools with side effects (write_tools)."),
	LISTD("auth.oauth", "write_tools", oauth.write_tools,
	      "manage_istio_config", 0, NULL,
	      "Tools, or tool sets, that need scope_write; every other tool "
	      "needs scope_read."),
	STR("auth.oauth", "resource_documentation",
	    oauth.resource_documentation, "", 0, NULL,
	    "URL of human-readable documentation for the protected resource "
	    "metadata; empty = none."),
	BOOL("ui", "enabled", ui.enabled, true,
	     "Serve the web console at /ui/ (its pages read the REST facade, "
	     "/api/); false answers 404 there."),
};
#define NKEYS (sizeof(keys) / sizeof(keys[0]))

static const char *const level_names[] = {"debug", "info", "warn", "error"};

/* ---- small helpers ----------------------------------------------------- */

static void *
field(struct config *cfg, const struct key_def *k)
{
	return (char *)cfg + k->off;
}

static const void *
cfield(const struct config *cfg, const struct key_def *k)
{
	return (const char *)cfg + k->off;
}

static void
dotted_name(const struct key_def *k, char *buf, size_t len)
{
	snprintf(buf, len, "%s.%s", k->table, k->name);
}

static const struct key_def *
find_key(const char *table, const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (strcmp(keys[i].table, table) == 0 &&
		    strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static const struct key_def *
find_dotted(const char *dotted)
{
	char name[160];

	for (size_t i = 0; i < NKEYS; i++) {
		dotted_name(&keys[i], name, sizeof(name));
		if (strcmp(name, dotted) == 0)
			return &keys[i];
	}
	return NULL;
}

/* A table name is known when some key's table is it or lies under it. */
static bool
is_table(const char *dotted)
{
	size_t n = strlen(dotted);

	for (size_t i = 0; i < NKEYS; i++)
		if (strncmp(keys[i].table, dotted, n) == 0 &&
		    (keys[i].table[n] == '\0' || keys[i].table[n] == '.'))
			return true;
	return false;
}

PRINTF_LIKE(6, 7)
static int
set_err(struct config_error *err, const char *file, int line, int col,
	const char *key, const char *fmt, ...)
{
	va_list ap;

	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	err->line = line;
	err->column = col;
	snprintf(err->key, sizeof(err->key), "%s", key ? key : "");
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return STATUS_INVALID;
}

void
config_error_format(const struct config_error *err, char *buf, size_t len)
{
	size_t n = 0;

	if (!buf || len == 0)
		return;
	buf[0] = '\0';
	if (err->file[0]) {
		if (err->line > 0)
			snprintf(buf, len, "%s:%d:%d: ", err->file, err->line,
				 err->column);
		else
			snprintf(buf, len, "%s: ", err->file);
	}
	n = strlen(buf);
	if (err->key[0] && n < len) {
		snprintf(buf + n, len - n, "%s: ", err->key);
		n = strlen(buf);
	}
	if (n < len)
		snprintf(buf + n, len - n, "%s", err->msg);
}

int
config_log_level_parse(const char *s)
{
	for (int i = 0; s && i < 4; i++)
		if (strcmp(s, level_names[i]) == 0)
			return i;
	return -1;
}

const char *
config_log_level_name(enum config_log_level level)
{
	if ((int)level < 0 || (int)level > 3)
		return "unknown";
	return level_names[level];
}

/*
 * Copies at most max bytes of s for a message, control characters shown
 * as '?', so a hostile value cannot forge log lines.
 */
static const char *
printable(const char *s, size_t max, char *buf, size_t len)
{
	size_t n = 0, i;

	for (i = 0; s[i] && i < max && n + 4 < len; i++) {
		unsigned char c = (unsigned char)s[i];

		buf[n++] = c < 0x20 || c == 0x7F ? '?' : (char)c;
	}
	if (s[i])
		buf[n++] = '.', buf[n++] = '.', buf[n++] = '.';
	buf[n] = '\0';
	return buf;
}

/* ---- value checks ------------------------------------------------------ */

int
config_parse_listen(const char *listen, char *host, size_t hostlen, int *port)
{
	const char *h, *ps, *end;
	size_t hl;
	long pv = 0;

	if (host && hostlen)
		host[0] = '\0';
	if (port)
		*port = 0;
	if (!listen || !host || !port)
		return STATUS_INVALID;
	if (listen[0] == '[') {
		h = listen + 1;
		end = strchr(h, ']');
		if (!end || end[1] != ':')
			return STATUS_INVALID;
		hl = (size_t)(end - h);
		ps = end + 2;
		if (!memchr(h, ':', hl))
			return STATUS_INVALID;
		for (size_t i = 0; i < hl; i++)
			if (!strchr("0123456789abcdefABCDEF:.%", h[i]) &&
			    !(memchr(h, '%', i) &&
			      (h[i] == '_' || h[i] == '-' ||
			       (h[i] >= 'a' && h[i] <= 'z') ||
			       (h[i] >= 'A' && h[i] <= 'Z'))))
				return STATUS_INVALID;
	} else {
		h = listen;
		end = strrchr(listen, ':');
		if (!end)
			return STATUS_INVALID;
		hl = (size_t)(end - h);
		ps = end + 1;
		for (size_t i = 0; i < hl; i++) {
			char c = h[i];

			/* a ':' left in the host is IPv6 without brackets */
			if (!((c >= 'a' && c <= 'z') ||
			      (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '.' || c == '-' ||
			      c == '_'))
				return STATUS_INVALID;
		}
	}
	if (hl == 0 || hl >= hostlen)
		return STATUS_INVALID;
	if (*ps == '\0' || strlen(ps) > 5)
		return STATUS_INVALID;
	for (const char *c = ps; *c; c++) {
		if (*c < '0' || *c > '9')
			return STATUS_INVALID;
		pv = pv * 10 + (*c - '0');
	}
	if (pv < 1 || pv > 65535)
		return STATUS_INVALID;
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (int)pv;
	return STATUS_OK;
}

static bool
check_listen(const char *s, char *msg, size_t len)
{
	char host[256], shown[128];
	int port;

	if (config_parse_listen(s, host, sizeof(host), &port) == STATUS_OK)
		return true;
	snprintf(msg, len,
		 "expected \"host:port\" or \"[ipv6]:port\" with a port "
		 "between 1 and 65535, got \"%s\"",
		 printable(s, 100, shown, sizeof(shown)));
	return false;
}

/* The value may be a raw key pasted by mistake: never echo it. */
static bool
check_key_hash(const char *s, char *msg, size_t len)
{
	bool ok = strncmp(s, "sha256:", 7) == 0 && strlen(s) == 7 + 64;

	for (size_t i = 7; ok && i < 7 + 64; i++)
		ok = (s[i] >= '0' && s[i] <= '9') ||
		     (s[i] >= 'a' && s[i] <= 'f');
	if (!ok)
		snprintf(msg, len,
			 "expected \"sha256:\" followed by 64 lowercase hex "
			 "digits; produce one with `sextant hash-key`");
	return ok;
}

/* An [auth] keys entry: a key hash, then optionally blanks and scopes
 * (RFC 6749 3.3 scope-tokens: visible ASCII but space, '"' and '\\'). */
static bool
check_api_key(const char *s, char *msg, size_t len)
{
	size_t n = strcspn(s, " \t");
	char hash[80];

	snprintf(hash, sizeof(hash), "%.*s", (int)(n < 79 ? n : 79), s);
	if (!check_key_hash(hash, msg, len))
		return false;
	for (s += n; *s != '\0'; s++)
		if (*s != ' ' && *s != '\t' &&
		    (*s < 0x21 || *s > 0x7e || *s == '"' || *s == '\\')) {
			snprintf(
				msg, len,
				"a scope after the key hash holds a character "
				"scopes cannot: name them as "
				"\"sha256:<hex> sextant:read sextant:ingest\"");
			return false;
		}
	return true;
}

/* One [redact] pattern, checked by lib/base/redact itself: a key pattern when
 * key, else a regex compiled the way the server compiles it at start-up. */
static bool
check_redact(const char *s, bool key, char *msg, size_t len)
{
	const char *one[] = {s};
	const char *prefix = key ? "keys item 1: " : "values item 1: ";
	struct redact *r = NULL;
	char why[512];
	int rc = key ? redact_new(one, 1, NULL, 0, false, &r, why, sizeof(why))
		     : redact_new(NULL, 0, one, 1, false, &r, why, sizeof(why));

	if (rc == STATUS_OK) {
		redact_free(r);
		return true;
	}
	/* the caller names the item */
	snprintf(msg, len, "%s",
		 strncmp(why, prefix, strlen(prefix)) == 0
			 ? why + strlen(prefix)
			 : why);
	return false;
}

static bool
check_regex(const char *s, char *msg, size_t len)
{
	return check_redact(s, false, msg, len);
}

static bool
check_redact_key(const char *s, char *msg, size_t len)
{
	return check_redact(s, true, msg, len);
}

/* A console's address for links: http(s), no query or fragment (the
 * paths are appended to it). */
static bool
check_link_url(const char *s, char *msg, size_t len)
{
	char shown[128];

	if (*s == '\0' || ((strncmp(s, "http://", 7) == 0 ||
			    strncmp(s, "https://", 8) == 0) &&
			   strpbrk(s, "?#\" \t") == NULL))
		return true;
	snprintf(msg, len,
		 "expected \"\" or an http:// or https:// address without "
		 "query or fragment, got \"%s\"",
		 printable(s, 100, shown, sizeof(shown)));
	return false;
}

/* lib/oauth refuses the rest: "none" and HMAC have no place with an
 * issuer's public keys (RFC 8725 3.1, 3.2); cjose has no EdDSA. */
static bool
check_oauth_alg(const char *s, char *msg, size_t len)
{
	static const char *const ok[] = {"RS256", "RS384", "RS512",
					 "PS256", "PS384", "PS512",
					 "ES256", "ES384", "ES512"};

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(s, ok[i]) == 0)
			return true;
	snprintf(msg, len,
		 "expected RS256, RS384, RS512, PS256, PS384, PS512, ES256, "
		 "ES384 or ES512");
	return false;
}

static bool
check_session_store(const char *s, char *msg, size_t len)
{
	char shown[128];

	if (strcmp(s, "auto") == 0 || strcmp(s, "database") == 0 ||
	    strcmp(s, "memory") == 0)
		return true;
	snprintf(msg, len,
		 "expected \"auto\", \"database\" or \"memory\", got \"%s\"",
		 printable(s, 100, shown, sizeof(shown)));
	return false;
}

static bool
check_timescaledb(const char *s, char *msg, size_t len)
{
	char shown[128];

	if (strcmp(s, "auto") == 0 || strcmp(s, "on") == 0 ||
	    strcmp(s, "off") == 0)
		return true;
	snprintf(msg, len, "expected \"auto\", \"on\" or \"off\", got \"%s\"",
		 printable(s, 100, shown, sizeof(shown)));
	return false;
}

/* "an integer between 1 and 1024": what the key accepts. */
static const char *
expected(const struct key_def *k, char *buf, size_t len)
{
	switch (k->type) {
	case KT_STRING: return "a string";
	case KT_INT:
	case KT_INT64:
		snprintf(buf, len, "an integer between %lld and %lld",
			 (long long)k->min, (long long)k->max);
		return buf;
	case KT_BOOL: return "a boolean (true or false)";
	case KT_LIST: return "an array of strings";
	case KT_LOGLEVEL:
		return "one of \"debug\", \"info\", \"warn\", \"error\"";
	case KT_PCT: return "a number from 0 to 100 (a percentage)";
	}
	return "a value";
}

/* What the document holds, for "got ..." (values of secrets hidden). */
static const char *
received(const struct toml_value *v, bool secret, char *buf, size_t len)
{
	switch (toml_type(v)) {
	case TOML_STRING:
		if (secret)
			return "a string";
		{
			char shown[96];

			snprintf(buf, len, "string \"%s\"",
				 printable(toml_string(v), 64, shown,
					   sizeof(shown)));
			return buf;
		}
	case TOML_INT:
		if (secret)
			return "an integer";
		snprintf(buf, len, "integer %lld", (long long)toml_int(v));
		return buf;
	case TOML_FLOAT:
		if (secret)
			return "a float";
		snprintf(buf, len, "float %g", toml_float(v));
		return buf;
	case TOML_BOOL:
		if (secret)
			return "a boolean";
		snprintf(buf, len, "boolean %s",
			 toml_bool(v) ? "true" : "false");
		return buf;
	case TOML_ARRAY: return "an array";
	case TOML_TABLE: return "a table";
	}
	return "a value";
}

/* ---- setting fields ---------------------------------------------------- */

static bool
strlist_same(const struct strlist *a, const struct strlist *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

static void
strlist_clear(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int
set_string(struct config *cfg, const struct key_def *k, const char *s)
{
	char *d = strdup(s), **slot = field(cfg, k);

	if (!d)
		return STATUS_NOMEM;
	free(*slot);
	*slot = d;
	return STATUS_OK;
}

static void
set_int(struct config *cfg, const struct key_def *k, int64_t v)
{
	if (k->type == KT_INT)
		*(int *)field(cfg, k) = (int)v;
	else
		*(int64_t *)field(cfg, k) = v;
}

/* Replaces the list with the n items (copied). */
static int
set_list(struct config *cfg, const struct key_def *k, char **items, size_t n)
{
	struct strlist *l = field(cfg, k), nl = {NULL, 0};

	if (n) {
		nl.v = calloc(n, sizeof(*nl.v));
		if (!nl.v)
			return STATUS_NOMEM;
		for (; nl.n < n; nl.n++) {
			nl.v[nl.n] = strdup(items[nl.n]);
			if (!nl.v[nl.n]) {
				strlist_clear(&nl);
				return STATUS_NOMEM;
			}
		}
	}
	strlist_clear(l);
	*l = nl;
	return STATUS_OK;
}

/* The list's default: the comma-separated items of k->def_s. */
static int
set_list_default(struct config *cfg, const struct key_def *k)
{
	char *copy = strdup(k->def_s), *items[64], *p;
	size_t n = 0;
	int rc;

	if (!copy)
		return STATUS_NOMEM;
	for (p = copy; p && n < sizeof(items) / sizeof(items[0]); n++) {
		items[n] = p;
		p = strchr(p, ',');
		if (p)
			*p++ = '\0';
	}
	rc = set_list(cfg, k, items, n);
	free(copy);
	return rc;
}

static int
nomem(struct config_error *err)
{
	set_err(err, NULL, 0, 0, NULL, "out of memory");
	return STATUS_NOMEM;
}

/* ---- from the TOML tree ------------------------------------------------ */

struct loader {
	struct config *cfg;
	const char *file;
	struct config_error *err;
};

static int
set_from_toml(struct loader *L, const struct key_def *k,
	      const struct toml_value *v)
{
	char name[160], exp[96], got[160], msg[256];
	int line = toml_line(v), col = toml_column(v);
	bool secret = k->flags & K_SECRET;
	char **items = NULL;
	size_t n = 0;
	int rc = STATUS_OK;

	dotted_name(k, name, sizeof(name));
	switch (k->type) {
	case KT_STRING:
	case KT_LOGLEVEL:
		if (toml_type(v) != TOML_STRING)
			goto wrong_type;
		if (strlen(toml_string(v)) != toml_string_len(v))
			return set_err(L->err, L->file, line, col, name,
				       "strings must not contain U+0000");
		if (k->type == KT_LOGLEVEL) {
			int lv = config_log_level_parse(toml_string(v));

			if (lv < 0)
				goto wrong_type;
			*(enum config_log_level *)field(L->cfg, k) = lv;
			return STATUS_OK;
		}
		if (k->check && !k->check(toml_string(v), msg, sizeof(msg)))
			return set_err(L->err, L->file, line, col, name, "%s",
				       msg);
		if (set_string(L->cfg, k, toml_string(v)))
			return nomem(L->err);
		return STATUS_OK;
	case KT_INT:
	case KT_INT64:
		if (toml_type(v) != TOML_INT || toml_int(v) < k->min ||
		    toml_int(v) > k->max)
			goto wrong_type;
		set_int(L->cfg, k, toml_int(v));
		return STATUS_OK;
	case KT_PCT: {
		double d;

		if (toml_type(v) == TOML_INT)
			d = (double)toml_int(v);
		else if (toml_type(v) == TOML_FLOAT)
			d = toml_float(v);
		else
			goto wrong_type;
		if (!(d >= 0 && d <= 100))
			goto wrong_type;
		*(double *)field(L->cfg, k) = d;
		return STATUS_OK;
	}
	case KT_BOOL:
		if (toml_type(v) != TOML_BOOL)
			goto wrong_type;
		*(bool *)field(L->cfg, k) = toml_bool(v);
		return STATUS_OK;
	case KT_LIST:
		if (toml_type(v) != TOML_ARRAY)
			goto wrong_type;
		n = toml_array_count(v);
		items = calloc(n ? n : 1, sizeof(*items));
		if (!items)
			return nomem(L->err);
		for (size_t i = 0; i < n; i++) {
			const struct toml_value *it = toml_array_at(v, i);

			if (toml_type(it) != TOML_STRING) {
				rc = set_err(
					L->err, L->file, toml_line(it),
					toml_column(it), name,
					"expected an array of strings, got "
					"%s as item %zu",
					received(it, secret, got, sizeof(got)),
					i + 1);
				goto out;
			}
			if (strlen(toml_string(it)) != toml_string_len(it)) {
				rc = set_err(L->err, L->file, toml_line(it),
					     toml_column(it), name,
					     "strings must not contain U+0000");
				goto out;
			}
			if (k->check &&
			    !k->check(toml_string(it), msg, sizeof(msg))) {
				rc = set_err(L->err, L->file, toml_line(it),
					     toml_column(it), name,
					     "item %zu: %s", i + 1, msg);
				goto out;
			}
			/* borrowed from the tree; set_list copies */
			items[i] = (char *)toml_string(it);
		}
		if (set_list(L->cfg, k, items, n))
			rc = nomem(L->err);
		goto out;
	}
wrong_type:
	return set_err(L->err, L->file, line, col, name, "expected %s, got %s",
		       expected(k, exp, sizeof(exp)),
		       received(v, secret, got, sizeof(got)));
out:
	free(items);
	return rc;
}

/* Levenshtein distance, for "did you mean"; names are short. */
static size_t
distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	return la > 160 || lb > 160 ? SIZE_MAX
				    : strdist(a, la, b, lb, false, SIZE_MAX);
}

static const char *
last_part(const char *dotted)
{
	const char *dot = strrchr(dotted, '.');

	return dot ? dot + 1 : dotted;
}

/*
 * Closest known key (or table, when want_table) to what was written, or
 * NULL when nothing is close.  The right key in the wrong table counts as
 * close: "listen" at the top level suggests "server.listen".
 */
static const char *
suggest(const char *dotted, bool want_table, char *buf, size_t len)
{
	size_t best = SIZE_MAX, limit = strlen(dotted) / 3;
	char cand[160];

	if (limit < 2)
		limit = 2;
	for (size_t i = 0; i < NKEYS; i++) {
		size_t d;

		if (want_table) {
			/* the table and each parent: "server.tls", "server" */
			snprintf(cand, sizeof(cand), "%s", keys[i].table);
		} else {
			dotted_name(&keys[i], cand, sizeof(cand));
		}
		for (;;) {
			d = distance(dotted, cand);
			if (strcmp(last_part(dotted), last_part(cand)) == 0 &&
			    d > 1)
				d = 1;
			if (d < best && d <= limit) {
				best = d;
				snprintf(buf, len, "%s", cand);
			}
			if (!want_table || !strrchr(cand, '.'))
				break;
			*strrchr(cand, '.') = '\0';
		}
	}
	return best == SIZE_MAX ? NULL : buf;
}

/* ---- metrics instances: [grafana.<name>], [prometheus.<name>] ----------
 *
 * Named tables of the same shape, any number up to
 * CONFIG_MAX_METRICS_INSTANCES, so their keys have a table of their own
 * (offsets into struct config_instance) beside the fixed one. */

enum {
	K_GRAFANA_ONLY = 1 << 2, /* not in a [prometheus.*] table */
};

#define IOFF(f) offsetof(struct config_instance, f)
#define ISTR(n, f, fl, doc)                                                    \
	{                                                                      \
		"", n, KT_STRING, IOFF(f), "", 0, 0, 0, fl, NULL, doc          \
	}
#define ISTRD(n, f, def, doc)                                                  \
	{                                                                      \
		"", n, KT_STRING, IOFF(f), def, 0, 0, 0, 0, NULL, doc          \
	}
#define ILIST(n, f, doc)                                                       \
	{                                                                      \
		"", n, KT_LIST, IOFF(f), NULL, 0, 0, 0, 0, NULL, doc           \
	}
#define IINT(n, f, def, lo, hi, doc)                                           \
	{                                                                      \
		"", n, KT_INT, IOFF(f), NULL, def, lo, hi, 0, NULL, doc        \
	}
#define IINT64(n, f, def, lo, hi, doc)                                         \
	{                                                                      \
		"", n, KT_INT64, IOFF(f), NULL, def, lo, hi, 0, NULL, doc      \
	}

static const struct key_def instance_keys[] = {
	ISTR("url", url, 0,
	     "Base URL of Grafana (\"https://grafana.example.com\") or of a "
	     "Prometheus HTTP API (\"http://127.0.0.1:9090\"); required."),
	ISTR("datasource_uid", datasource_uid, K_GRAFANA_ONLY,
	     "Grafana only: uid of the Prometheus data source that queries go "
	     "through (/api/datasources/proxy/uid/<uid>/api/v1/...); set "
	     "this or datasource_name."),
	ISTR("datasource_name", datasource_name, K_GRAFANA_ONLY,
	     "Grafana only: the data source by name instead, looked up once "
	     "(/api/datasources/name/<name>)."),
	ISTR("token", token, K_SECRET,
	     "Bearer token sent as Authorization (for Grafana a "
	     "service-account token); prefer token_file."),
	ISTR("token_file", token_file, 0,
	     "File holding the bearer token, read again whenever it changes "
	     "(rotation needs no restart)."),
	ISTR("ca_file", ca_file, 0,
	     "PEM CA bundle that verifies the server's certificate; empty = "
	     "the system store.  Verification is always on."),
	IINT("connect_timeout_ms", connect_timeout_ms, 3000, 100, 60000,
	     "Milliseconds to establish a connection."),
	IINT("timeout_ms", timeout_ms, 30000, 100, 600000,
	     "Milliseconds one attempt may take, connection included; a "
	     "slower answer fails."),
	IINT64("max_response_bytes", max_response_bytes, 33554432, 1024,
	       1073741824,
	       "Largest answer accepted, after decompression; a larger one "
	       "fails."),
	IINT("max_concurrent", max_concurrent, 5, 1, 100,
	     "Requests sent to the instance at once; more wait for a slot."),
	IINT("queue_timeout_ms", queue_timeout_ms, 10000, 0, 600000,
	     "Milliseconds a request waits for a free slot before it fails."),
	IINT("retries", retries, 2, 0, 10,
	     "Retries after a connection error or a 5xx answer (never after "
	     "a 4xx), with exponential backoff and jitter."),
	IINT("retry_base_ms", retry_base_ms, 200, 0, 60000,
	     "Backoff before the first retry; it doubles each time, half of "
	     "it random."),
	IINT("breaker_failures", breaker_failures, 5, 1, 1000,
	     "Consecutive failed requests that open the circuit breaker; "
	     "while open, requests fail at once."),
	IINT("breaker_cooldown_s", breaker_cooldown_s, 30, 1, 3600,
	     "Seconds the breaker stays open before one trial request is let "
	     "through."),
	IINT("names_ttl_s", names_ttl_s, 300, 0, 86400,
	     "Seconds the list of metric names is cached."),
	IINT("metadata_ttl_s", metadata_ttl_s, 3600, 0, 604800,
	     "Seconds a metric's metadata (type, unit, help) is cached."),
	ILIST("services", services,
	      "Services whose call metrics query_metrics also reads from "
	      "this instance, as a [Prometheus] source beside the spans: "
	      "\"checkout\" selects the series whose service_label is "
	      "checkout, \"checkout=checkout-v2\" those labelled checkout-v2, "
	      "\"*\" every service.  The first instance listing a service "
	      "serves it."),
	ISTRD("service_label", service_label, "service_name",
	      "The label naming the service in those series (\"job\" behind "
	      "an OpenTelemetry Collector's Prometheus exporter)."),
	ISTRD("http_metric", http_metric,
	      "http_server_request_duration_seconds",
	      "Histogram (seconds) of HTTP server calls, labelled http_route, "
	      "http_request_method and http_response_status_code, as "
	      "Beyla/OBI and OpenTelemetry export them."),
	ISTRD("grpc_metric", grpc_metric, "rpc_server_duration_seconds",
	      "Histogram (seconds) of gRPC server calls, labelled rpc_method "
	      "and rpc_grpc_status_code."),
	ISTRD("sql_metric", sql_metric, "db_client_operation_duration_seconds",
	      "Histogram (seconds) of database client calls, labelled "
	      "db_operation_name (or db_operation), db_collection_name (or "
	      "db_sql_table) and error_type when the call failed."),
};
#define NINSTKEYS (sizeof(instance_keys) / sizeof(instance_keys[0]))

static const char *const kind_names[] = {
	[CONFIG_INSTANCE_GRAFANA] = "grafana",
	[CONFIG_INSTANCE_PROMETHEUS] = "prometheus",
};

static void *
ifield(const struct config_instance *in, const struct key_def *k)
{
	return (char *)in + k->off;
}

static void
instance_clear(struct config_instance *in)
{
	free(in->name);
	for (size_t i = 0; i < NINSTKEYS; i++)
		if (instance_keys[i].type == KT_STRING)
			free(*(char **)ifield(in, &instance_keys[i]));
		else if (instance_keys[i].type == KT_LIST)
			strlist_clear(ifield(in, &instance_keys[i]));
	memset(in, 0, sizeof(*in));
}

static int
instance_defaults(struct config_instance *in, const char *name,
		  enum config_instance_kind kind, int line)
{
	memset(in, 0, sizeof(*in));
	in->kind = kind;
	in->line = line;
	in->name = strdup(name);
	if (in->name == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < NINSTKEYS; i++) {
		const struct key_def *k = &instance_keys[i];

		if (k->type == KT_STRING) {
			char *d = strdup(k->def_s);

			if (d == NULL)
				return STATUS_NOMEM;
			*(char **)ifield(in, k) = d;
		} else if (k->type == KT_LIST) {
			/* empty: calloc'd by the caller's memset */
		} else if (k->type == KT_INT) {
			*(int *)ifield(in, k) = (int)k->def_i;
		} else {
			*(int64_t *)ifield(in, k) = k->def_i;
		}
	}
	return STATUS_OK;
}

static bool
instance_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
		      s[i] == '-'))
			return false;
	return true;
}

/* An item of services: "name", "name=<label value>" or "*". */
static bool
service_item_ok(const char *s, char *msg, size_t len)
{
	const char *eq = strchr(s, '=');
	size_t n = strlen(s);

	if (n == 0 || n > 400 || eq == s || (eq != NULL && eq[1] == '\0')) {
		snprintf(msg, len,
			 "expected a service name (\"checkout\"), a name and "
			 "the label value of its series (\"checkout=checkout-"
			 "v2\") or \"*\", of at most 400 bytes");
		return false;
	}
	return true;
}

static int
load_services(struct loader *L, struct strlist *out, const struct toml_value *v,
	      const char *dotted)
{
	size_t n = toml_array_count(v);
	struct strlist l = {NULL, 0};
	char msg[256], got[160];

	if (n > 1000)
		return set_err(L->err, L->file, toml_line(v), toml_column(v),
			       dotted,
			       "more than 1000 services: use \"*\" for every "
			       "service");
	l.v = calloc(n ? n : 1, sizeof(*l.v));
	if (l.v == NULL)
		return nomem(L->err);
	for (size_t i = 0; i < n; i++) {
		const struct toml_value *it = toml_array_at(v, i);
		int rc;

		if (toml_type(it) != TOML_STRING ||
		    strlen(toml_string(it)) != toml_string_len(it) ||
		    !service_item_ok(toml_string(it), msg, sizeof(msg))) {
			if (toml_type(it) != TOML_STRING)
				snprintf(msg, sizeof(msg),
					 "expected an array of strings, got %s",
					 received(it, false, got, sizeof(got)));
			rc = set_err(L->err, L->file, toml_line(it),
				     toml_column(it), dotted, "item %zu: %s",
				     i + 1, msg);
			strlist_clear(&l);
			return rc;
		}
		l.v[l.n] = strdup(toml_string(it));
		if (l.v[l.n] == NULL) {
			strlist_clear(&l);
			return nomem(L->err);
		}
		l.n++;
	}
	strlist_clear(out);
	*out = l;
	return STATUS_OK;
}

static int
load_instance(struct loader *L, struct config_instance *in,
	      const struct toml_value *t, const char *prefix)
{
	for (size_t i = 0; i < toml_table_count(t); i++) {
		const char *name = toml_table_key_at(t, i);
		const struct toml_value *v = toml_table_value_at(t, i);
		const struct key_def *k = NULL;
		char dotted[360], shown[128], exp[96], got[160];
		int line, col;

		toml_table_key_pos(t, i, &line, &col);
		snprintf(dotted, sizeof(dotted), "%s.%s", prefix,
			 printable(name, 100, shown, sizeof(shown)));
		for (size_t j = 0; j < NINSTKEYS; j++)
			if (strcmp(instance_keys[j].name, name) == 0)
				k = &instance_keys[j];
		if (k == NULL) {
			const char *best = NULL;
			size_t bd = 3;

			for (size_t j = 0; j < NINSTKEYS; j++) {
				size_t d =
					distance(name, instance_keys[j].name);

				if (d < bd) {
					bd = d;
					best = instance_keys[j].name;
				}
			}
			return set_err(L->err, L->file, line, col, dotted,
				       "unknown key \"%s\"%s%s%s", dotted,
				       best ? "; did you mean \"" : "",
				       best ? best : "", best ? "\"?" : "");
		}
		if ((k->flags & K_GRAFANA_ONLY) &&
		    in->kind == CONFIG_INSTANCE_PROMETHEUS)
			return set_err(L->err, L->file, line, col, dotted,
				       "%s is for [grafana.*] instances: a "
				       "[prometheus.*] url is queried "
				       "directly",
				       k->name);
		line = toml_line(v);
		col = toml_column(v);
		if (k->type == KT_LIST) {
			int rc;

			if (toml_type(v) != TOML_ARRAY)
				goto wrong_type;
			rc = load_services(L, ifield(in, k), v, dotted);
			if (rc != STATUS_OK)
				return rc;
			continue;
		}
		if (k->type == KT_STRING) {
			char *d;

			if (toml_type(v) != TOML_STRING)
				goto wrong_type;
			if (strlen(toml_string(v)) != toml_string_len(v))
				return set_err(L->err, L->file, line, col,
					       dotted,
					       "strings must not contain "
					       "U+0000");
			d = strdup(toml_string(v));
			if (d == NULL)
				return nomem(L->err);
			free(*(char **)ifield(in, k));
			*(char **)ifield(in, k) = d;
			continue;
		}
		if (toml_type(v) != TOML_INT || toml_int(v) < k->min ||
		    toml_int(v) > k->max)
			goto wrong_type;
		if (k->type == KT_INT)
			*(int *)ifield(in, k) = (int)toml_int(v);
		else
			*(int64_t *)ifield(in, k) = toml_int(v);
		continue;
wrong_type:
		return set_err(
			L->err, L->file, line, col, dotted,
			"expected %s, got %s", expected(k, exp, sizeof(exp)),
			received(v, k->flags & K_SECRET, got, sizeof(got)));
	}
	if (strncmp(in->url, "http://", 7) != 0 &&
	    strncmp(in->url, "https://", 8) != 0)
		return set_err(L->err, L->file, in->line, 1, prefix,
			       "url is required and must start with http:// "
			       "or https:// (e.g. url = \"%s\")",
			       in->kind == CONFIG_INSTANCE_GRAFANA
				       ? "https://grafana.example.com"
				       : "http://127.0.0.1:9090");
	if (strlen(in->url) > 400 || strpbrk(in->url, " \t\r\n?#") != NULL)
		return set_err(L->err, L->file, in->line, 1, prefix,
			       "url must be a base URL of at most 400 bytes "
			       "without spaces, query or fragment");
	if (in->kind == CONFIG_INSTANCE_GRAFANA &&
	    !in->datasource_uid[0] == !in->datasource_name[0])
		return set_err(L->err, L->file, in->line, 1, prefix,
			       "set exactly one of datasource_uid and "
			       "datasource_name: the Prometheus data source "
			       "the queries go through");
	if (in->token[0] && in->token_file[0])
		return set_err(L->err, L->file, in->line, 1, prefix,
			       "set token or token_file, not both");
	for (const char *c = in->token; *c; c++)
		if ((unsigned char)*c < 0x21 || (unsigned char)*c > 0x7e)
			return set_err(L->err, L->file, in->line, 1, prefix,
				       "token must be printable ASCII without "
				       "spaces");
	if (!promql_label_name_ok(in->service_label))
		return set_err(L->err, L->file, in->line, 1, prefix,
			       "service_label must be a Prometheus label name "
			       "([a-zA-Z_][a-zA-Z0-9_]*, not starting "
			       "\"__\"), e.g. \"service_name\" or \"job\"");
	{
		const char *const m[][2] = {
			{"http_metric", in->http_metric},
			{"grpc_metric", in->grpc_metric},
			{"sql_metric", in->sql_metric},
		};

		for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
			if (!promql_metric_name_ok(m[i][1]))
				return set_err(
					L->err, L->file, in->line, 1, prefix,
					"%s must be a Prometheus metric name "
					"([a-zA-Z_:][a-zA-Z0-9_:]*), the "
					"histogram without _bucket",
					m[i][0]);
	}
	return STATUS_OK;
}

/* [grafana] or [prometheus]: a table of named instance tables. */
static int
load_instances(struct loader *L, const char *kind_name,
	       const struct toml_value *t, int line, int col)
{
	enum config_instance_kind kind = strcmp(kind_name, "grafana") == 0
						 ? CONFIG_INSTANCE_GRAFANA
						 : CONFIG_INSTANCE_PROMETHEUS;
	char got[64], shown[128], prefix[200];

	if (toml_type(t) != TOML_TABLE)
		return set_err(L->err, L->file, line, col, kind_name,
			       "expected a table of named instances such as "
			       "[%s.main], got %s",
			       kind_name,
			       toml_array_is_tables(t)
				       ? "an array of tables"
				       : received(t, false, got, sizeof(got)));
	for (size_t i = 0; i < toml_table_count(t); i++) {
		const char *name = toml_table_key_at(t, i);
		const struct toml_value *v = toml_table_value_at(t, i);
		struct config_instance *grown, *in;
		int rc;

		toml_table_key_pos(t, i, &line, &col);
		snprintf(prefix, sizeof(prefix), "%s.%s", kind_name,
			 printable(name, 100, shown, sizeof(shown)));
		if (!instance_name_ok(name))
			return set_err(L->err, L->file, line, col, prefix,
				       "instance names are 1 to 64 letters, "
				       "digits, '_' or '-'");
		if (toml_type(v) != TOML_TABLE)
			return set_err(L->err, L->file, line, col, prefix,
				       "expected a table: write [%s] with url "
				       "= \"...\" under it",
				       prefix);
		for (size_t j = 0; j < L->cfg->instances.n; j++)
			if (strcmp(L->cfg->instances.v[j].name, name) == 0)
				return set_err(
					L->err, L->file, line, col, prefix,
					"instance name \"%s\" is already used "
					"by [%s.%s]: names must be unique",
					name,
					kind_names[L->cfg->instances.v[j].kind],
					name);
		if (L->cfg->instances.n >= CONFIG_MAX_METRICS_INSTANCES)
			return set_err(L->err, L->file, line, col, prefix,
				       "more than %d metrics instances",
				       CONFIG_MAX_METRICS_INSTANCES);
		grown = realloc(L->cfg->instances.v,
				(L->cfg->instances.n + 1) * sizeof(*grown));
		if (grown == NULL)
			return nomem(L->err);
		L->cfg->instances.v = grown;
		in = &grown[L->cfg->instances.n++];
		rc = instance_defaults(in, name, kind, toml_line(v));
		if (rc != STATUS_OK)
			return nomem(L->err);
		rc = load_instance(L, in, v, prefix);
		if (rc != STATUS_OK)
			return rc;
	}
	/* file order across both tables: the first is the default */
	for (size_t i = 1; i < L->cfg->instances.n; i++)
		for (size_t j = i; j > 0 && L->cfg->instances.v[j - 1].line >
						    L->cfg->instances.v[j].line;
		     j--) {
			struct config_instance tmp = L->cfg->instances.v[j];

			L->cfg->instances.v[j] = L->cfg->instances.v[j - 1];
			L->cfg->instances.v[j - 1] = tmp;
		}
	return STATUS_OK;
}

static int
load_table(struct loader *L, const struct toml_value *t, const char *prefix,
	   int depth)
{
	for (size_t i = 0; i < toml_table_count(t); i++) {
		const char *name = toml_table_key_at(t, i);
		const struct toml_value *v = toml_table_value_at(t, i);
		const struct key_def *k =
			prefix[0] ? find_key(prefix, name) : NULL;
		char dotted[320], hint[160], got[64], shown[128];
		int line, col, rc;
		bool table = toml_type(v) == TOML_TABLE;

		toml_table_key_pos(t, i, &line, &col);
		if (!prefix[0] && (strcmp(name, "grafana") == 0 ||
				   strcmp(name, "prometheus") == 0)) {
			rc = load_instances(L, name, v, line, col);
			if (rc)
				return rc;
			continue;
		}
		/* a quoted key holding a dot is one key, never a path */
		snprintf(dotted, sizeof(dotted), "%s%s%s%s%s", prefix,
			 prefix[0] ? "." : "", strchr(name, '.') ? "\"" : "",
			 printable(name, 100, shown, sizeof(shown)),
			 strchr(name, '.') ? "\"" : "");
		if (k) {
			rc = set_from_toml(L, k, v);
		} else if (depth < 4 && strlen(dotted) < 128 &&
			   is_table(dotted)) {
			if (!table)
				return set_err(L->err, L->file, line, col,
					       dotted,
					       "expected a table, got %s",
					       toml_array_is_tables(v)
						       ? "an array of tables"
						       : received(v, false, got,
								  sizeof(got)));
			rc = load_table(L, v, dotted, depth + 1);
		} else {
			const char *s =
				suggest(dotted, table, hint, sizeof(hint));

			return set_err(L->err, L->file, line, col, dotted,
				       "unknown key \"%s\"%s%s%s%s", dotted,
				       table ? " (no such table)" : "",
				       s ? "; did you mean \"" : "", s ? s : "",
				       s ? "\"?" : "");
		}
		if (rc)
			return rc;
	}
	return STATUS_OK;
}

/* ---- from the environment ---------------------------------------------- */

static const char *
env_get(char *const *envp, const char *name)
{
	size_t n = strlen(name);

	for (; envp && *envp; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return *envp + n + 1;
	return NULL;
}

/* SEXTANT_<TABLE>_<KEY>: dots and hyphens become '_', letters upper. */
static void
env_name(const struct key_def *k, char *buf, size_t len)
{
	snprintf(buf, len, "SEXTANT_%s_%s", k->table, k->name);
	for (char *c = buf; *c; c++) {
		if (*c == '.' || *c == '-')
			*c = '_';
		else if (*c >= 'a' && *c <= 'z')
			*c = (char)(*c - 'a' + 'A');
	}
}

static bool
parse_int64(const char *s, int64_t *out)
{
	char *end;
	long long v;

	if (!((*s >= '0' && *s <= '9') || *s == '-' || *s == '+'))
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || end == s || *end != '\0')
		return false;
	*out = v;
	return true;
}

/* Sets k from the text of environment variable var. */
static int
set_from_env(struct config *cfg, const struct key_def *k, const char *var,
	     const char *s, struct config_error *err)
{
	char name[160], exp[96], msg[256];
	bool secret = k->flags & K_SECRET;
	char **items = NULL;
	char *copy = NULL;
	size_t n = 0;
	int64_t iv;
	int rc = STATUS_OK;

	dotted_name(k, name, sizeof(name));
	switch (k->type) {
	case KT_STRING:
		if (k->check && !k->check(s, msg, sizeof(msg)))
			return set_err(err, NULL, 0, 0, var, "%s (sets %s)",
				       msg, name);
		return set_string(cfg, k, s) ? nomem(err) : STATUS_OK;
	case KT_LOGLEVEL:
		if (config_log_level_parse(s) < 0)
			goto bad;
		*(enum config_log_level *)field(cfg, k) =
			config_log_level_parse(s);
		return STATUS_OK;
	case KT_INT:
	case KT_INT64:
		if (!parse_int64(s, &iv) || iv < k->min || iv > k->max)
			goto bad;
		set_int(cfg, k, iv);
		return STATUS_OK;
	case KT_PCT: {
		char *end;
		double d;

		errno = 0;
		d = strtod(s, &end);
		if (errno || end == s || *end || !(d >= 0 && d <= 100))
			goto bad;
		*(double *)field(cfg, k) = d;
		return STATUS_OK;
	}
	case KT_BOOL:
		if (strcmp(s, "true") == 0 || strcmp(s, "1") == 0)
			*(bool *)field(cfg, k) = true;
		else if (strcmp(s, "false") == 0 || strcmp(s, "0") == 0)
			*(bool *)field(cfg, k) = false;
		else
			goto bad;
		return STATUS_OK;
	case KT_LIST: {
		/* comma-separated; blanks around items and empty items are
		 * dropped, so "" is the empty list */
		size_t cap = 1;
		char *tok, *next;

		for (const char *c = s; *c; c++)
			cap += *c == ',';
		copy = strdup(s);
		items = calloc(cap, sizeof(*items));
		if (!copy || !items) {
			rc = nomem(err);
			goto out;
		}
		for (tok = copy; tok; tok = next) {
			char *end;

			next = strchr(tok, ',');
			if (next)
				*next++ = '\0';
			while (*tok == ' ' || *tok == '\t')
				tok++;
			end = tok + strlen(tok);
			while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
				*--end = '\0';
			if (!*tok)
				continue;
			if (k->check && !k->check(tok, msg, sizeof(msg))) {
				rc = set_err(err, NULL, 0, 0, var,
					     "item %zu: %s (sets %s)", n + 1,
					     msg, name);
				goto out;
			}
			items[n++] = tok;
		}
		if (set_list(cfg, k, items, n))
			rc = nomem(err);
		goto out;
	}
	}
bad:
	if (secret)
		return set_err(err, NULL, 0, 0, var, "expected %s (sets %s)",
			       expected(k, exp, sizeof(exp)), name);
	return set_err(err, NULL, 0, 0, var,
		       "expected %s (sets %s), got \"%s\"",
		       expected(k, exp, sizeof(exp)), name,
		       printable(s, 64, msg, sizeof(msg)));
out:
	free(items);
	free(copy);
	return rc;
}

static int
apply_env(struct config *cfg, char *const *envp, struct config_error *err)
{
	static const struct {
		const char *var, *key;
	} aliases[] = {
		{"DATABASE_URL", "database.url"},
		{"SEXTANT_LISTEN", "server.listen"},
	};
	char var[160];
	const char *s;
	int rc;

	for (size_t i = 0; i < NKEYS; i++) {
		env_name(&keys[i], var, sizeof(var));
		s = env_get(envp, var);
		if (s) {
			rc = set_from_env(cfg, &keys[i], var, s, err);
			if (rc)
				return rc;
		}
	}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
		s = env_get(envp, aliases[i].var);
		if (s) {
			rc = set_from_env(cfg, find_dotted(aliases[i].key),
					  aliases[i].var, s, err);
			if (rc)
				return rc;
		}
	}
	return STATUS_OK;
}

/* ---- public entry points ----------------------------------------------- */

int
config_defaults(struct config **out)
{
	struct config *cfg = calloc(1, sizeof(*cfg));

	*out = NULL;
	if (!cfg)
		return STATUS_NOMEM;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key_def *k = &keys[i];

		switch (k->type) {
		case KT_STRING:
			if (set_string(cfg, k, k->def_s)) {
				config_free(cfg);
				return STATUS_NOMEM;
			}
			break;
		case KT_INT:
		case KT_INT64: set_int(cfg, k, k->def_i); break;
		case KT_PCT: *(double *)field(cfg, k) = k->def_r; break;
		case KT_BOOL: *(bool *)field(cfg, k) = k->def_i != 0; break;
		case KT_LIST:
			if (k->def_s && set_list_default(cfg, k)) {
				config_free(cfg);
				return STATUS_NOMEM;
			}
			break;
		case KT_LOGLEVEL:
			*(enum config_log_level *)field(cfg, k) =
				config_log_level_parse(k->def_s);
			break;
		}
	}
	*out = cfg;
	return STATUS_OK;
}

void
config_free(struct config *cfg)
{
	if (!cfg)
		return;
	for (size_t i = 0; i < NKEYS; i++) {
		if (keys[i].type == KT_STRING)
			free(*(char **)field(cfg, &keys[i]));
		else if (keys[i].type == KT_LIST)
			strlist_clear(field(cfg, &keys[i]));
	}
	for (size_t i = 0; i < cfg->instances.n; i++)
		instance_clear(&cfg->instances.v[i]);
	free(cfg->instances.v);
	free(cfg);
}

int
config_load_text(const char *text, size_t len, const char *name,
		 char *const *envp, struct config **out,
		 struct config_error *err)
{
	struct config_error dummy;
	struct toml_value *root = NULL;
	struct toml_error terr;
	struct config *cfg = NULL;
	struct loader L;
	int rc;

	*out = NULL;
	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	if (!name)
		name = "config";
	if (!envp)
		envp = environ;
	rc = config_defaults(&cfg);
	if (rc) {
		nomem(err);
		goto out;
	}
	if (text) {
		rc = toml_parse(text, len, CONFIG_MAX_FILE_BYTES, &root, &terr);
		if (rc) {
			set_err(err, name, terr.line, terr.column, NULL, "%s",
				terr.msg);
			goto out;
		}
		L = (struct loader){cfg, name, err};
		rc = load_table(&L, root, "", 0);
		if (rc)
			goto out;
	}
	rc = apply_env(cfg, envp, err);
	if (rc)
		goto out;
	/* the text is part of the whole answer: a budget below it would
	 * leave no room for any structured row */
	if (cfg->tools.max_answer_bytes < cfg->tools.max_answer_chars) {
		rc = set_err(err, text ? name : NULL, 0, 0,
			     "tools.max_answer_bytes",
			     "must be at least max_answer_chars (%d), got %d: "
			     "the whole answer carries the text",
			     cfg->tools.max_answer_chars,
			     cfg->tools.max_answer_bytes);
		goto out;
	}
	if (!cfg->server.tls_cert[0] != !cfg->server.tls_key[0]) {
		rc = set_err(err, text ? name : NULL, 0, 0, "server.tls",
			     "cert and key must be set together (both empty "
			     "= plain HTTP)");
		goto out;
	}
	*out = cfg;
	cfg = NULL;
out:
	toml_free(root);
	config_free(cfg);
	return rc;
}

int
config_load(const char *path, char *const *envp, struct config **out,
	    struct config_error *err)
{
	struct config_error dummy;
	FILE *f = NULL;
	char *text = NULL;
	size_t n;
	int rc;

	*out = NULL;
	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	if (!path)
		return config_load_text(NULL, 0, NULL, envp, out, err);
	f = fopen(path, "r");
	if (!f) {
		rc = STATUS_IO;
		set_err(err, path, 0, 0, NULL, "cannot open: %s",
			strerror(errno));
		goto out;
	}
	text = malloc(CONFIG_MAX_FILE_BYTES + 1);
	if (!text) {
		rc = nomem(err);
		goto out;
	}
	n = fread(text, 1, CONFIG_MAX_FILE_BYTES + 1, f);
	if (ferror(f)) {
		rc = STATUS_IO;
		set_err(err, path, 0, 0, NULL, "cannot read: %s",
			strerror(errno));
		goto out;
	}
	if (n > CONFIG_MAX_FILE_BYTES) {
		rc = STATUS_LIMIT;
		set_err(err, path, 0, 0, NULL,
			"file is larger than %d bytes: is this the right file?",
			CONFIG_MAX_FILE_BYTES);
		goto out;
	}
	rc = config_load_text(text, n, path, envp, out, err);
out:
	if (f)
		fclose(f);
	free(text);
	return rc;
}

/* ---- printing ---------------------------------------------------------- */

static void
print_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (c < 0x20 || c == 0x7F)
				fprintf(f, "\\u%04X", c);
			else
				fputc(c, f);
		}
	}
	fputc('"', f);
}

/* Columns print_string takes for s. */
static size_t
string_width(const char *s)
{
	size_t w = 2;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\' || c == '\n' || c == '\t' ||
		    c == '\r')
			w += 2;
		else if (c < 0x20 || c == 0x7F)
			w += 6;
		else
			w++;
	}
	return w;
}

/* "key = value" as TOML; secrets print as "****" unless empty. */
static void
print_value(FILE *f, const struct config *cfg, const struct key_def *k,
	    bool mask)
{
	const void *p = cfield(cfg, k);

	fprintf(f, "%s = ", k->name);
	switch (k->type) {
	case KT_STRING: {
		const char *s = *(char *const *)p;

		print_string(f, mask && s[0] ? "****" : s);
		break;
	}
	case KT_INT: fprintf(f, "%d", *(const int *)p); break;
	case KT_INT64:
		fprintf(f, "%lld", (long long)*(const int64_t *)p);
		break;
	case KT_PCT: fprintf(f, "%g", *(const double *)p); break;
	case KT_BOOL: fputs(*(const bool *)p ? "true" : "false", f); break;
	case KT_LIST: {
		const struct strlist *l = p;
		size_t width = strlen(k->name) + 5, col = 4;

		for (size_t i = 0; i < l->n; i++)
			width += string_width(mask ? "****" : l->v[i]) + 2;
		if (width < 80) {
			fputc('[', f);
			for (size_t i = 0; i < l->n; i++) {
				if (i)
					fputs(", ", f);
				print_string(f, mask ? "****" : l->v[i]);
			}
			fputc(']', f);
			break;
		}
		/* one line would pass 79 columns: items wrapped, indented */
		fputs("[\n    ", f);
		for (size_t i = 0; i < l->n; i++) {
			size_t w = string_width(mask ? "****" : l->v[i]) + 1;

			if (i > 0 && col + w + 1 >= 80) {
				fputs("\n    ", f);
				col = 4;
			} else if (i > 0) {
				fputc(' ', f);
				col++;
			}
			print_string(f, mask ? "****" : l->v[i]);
			fputc(',', f);
			col += w;
		}
		fputs("\n]", f);
		break;
	}
	case KT_LOGLEVEL:
		print_string(f, config_log_level_name(
					*(const enum config_log_level *)p));
		break;
	}
	fputc('\n', f);
}

/* Each [grafana.<name>] / [prometheus.<name>] with every key. */
static void
print_instances(FILE *f, const struct config *cfg)
{
	for (size_t i = 0; i < cfg->instances.n; i++) {
		const struct config_instance *in = &cfg->instances.v[i];

		fprintf(f, "\n[%s.%s]\n", kind_names[in->kind], in->name);
		for (size_t j = 0; j < NINSTKEYS; j++) {
			const struct key_def *k = &instance_keys[j];
			const void *p = ifield(in, k);

			if ((k->flags & K_GRAFANA_ONLY) &&
			    in->kind != CONFIG_INSTANCE_GRAFANA)
				continue;
			fprintf(f, "%s = ", k->name);
			if (k->type == KT_STRING) {
				print_string(
					f, (k->flags &
					    K_SECRET) && (*(char *const *)p)[0]
						   ? "****"
						   : *(char *const *)p);
			} else if (k->type == KT_LIST) {
				const struct strlist *l = p;

				fputc('[', f);
				for (size_t x = 0; x < l->n; x++) {
					if (x)
						fputs(", ", f);
					print_string(f, l->v[x]);
				}
				fputc(']', f);
			} else if (k->type == KT_INT)
				fprintf(f, "%d", *(const int *)p);
			else
				fprintf(f, "%lld",
					(long long)*(const int64_t *)p);
			fputc('\n', f);
		}
	}
}

void
config_print(const struct config *cfg, FILE *f)
{
	const char *table = NULL;

	fputs("# Effective configuration (secrets shown as \"****\").\n", f);
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key_def *k = &keys[i];

		if (!table || strcmp(table, k->table) != 0) {
			table = k->table;
			fprintf(f, "\n[%s]\n", table);
		}
		print_value(f, cfg, k, k->flags & K_SECRET);
	}
	print_instances(f, cfg);
}

/* Writes text as "# " comment lines wrapped before 80 columns. */
static void
print_comment(FILE *f, const char *text)
{
	const size_t width = 76;

	while (*text) {
		size_t n = strlen(text), cut = n;

		if (n > width) {
			cut = width;
			while (cut > 0 && text[cut] != ' ')
				cut--;
			if (cut == 0)
				cut = width;
		}
		fprintf(f, "# %.*s\n", (int)cut, text);
		text += cut;
		while (*text == ' ')
			text++;
	}
}

static void
example_kind(const struct key_def *k, char *buf, size_t len)
{
	switch (k->type) {
	case KT_STRING: snprintf(buf, len, "string"); break;
	case KT_INT:
	case KT_INT64:
		snprintf(buf, len, "integer %lld..%lld", (long long)k->min,
			 (long long)k->max);
		break;
	case KT_BOOL: snprintf(buf, len, "boolean"); break;
	case KT_LIST: snprintf(buf, len, "list of strings"); break;
	case KT_LOGLEVEL:
		snprintf(buf, len, "debug, info, warn or error");
		break;
	case KT_PCT: snprintf(buf, len, "percentage 0..100"); break;
	}
}

/* The metrics instances: none by default, so a commented example and
 * every key of an instance table with its default and doc line. */
static void
print_instances_example(FILE *f)
{
	char kind[96], line[256];

	fputs("\n# ---- Metrics instances (query_grafana_metrics) ----\n#\n",
	      f);
	print_comment(
		f, "None by default.  Each [grafana.<name>] table is a Grafana "
		   "whose Prometheus data source is queried through Grafana's "
		   "data source proxy; each [prometheus.<name>] table is a "
		   "Prometheus queried directly.  <name> (letters, digits, "
		   "'_', '-') is what the tool's instance argument takes; the "
		   "first table in the file is the default.  These keys have "
		   "no environment overrides and need a restart to change.  "
		   "For example:");
	fputs("#\n"
	      "# [grafana.main]\n"
	      "# url = \"https://grafana.example.com\"\n"
	      "# datasource_uid = \"prometheus\"\n"
	      "# token_file = \"/etc/sextant/grafana-token\"\n"
	      "#\n"
	      "# [prometheus.local]\n"
	      "# url = \"http://127.0.0.1:9090\"\n"
	      "#\n"
	      "# The keys of an instance table, with their defaults:\n",
	      f);
	for (size_t i = 0; i < NINSTKEYS; i++) {
		const struct key_def *k = &instance_keys[i];

		example_kind(k, kind, sizeof(kind));
		snprintf(line, sizeof(line), "%s%s%s", kind,
			 k->flags & K_SECRET ? "; secret" : "",
			 k->flags & K_GRAFANA_ONLY ? "; [grafana.*] only" : "");
		fputs("#\n", f);
		print_comment(f, k->doc);
		print_comment(f, line);
		if (k->type == KT_STRING)
			fprintf(f, "# %s = \"%s\"\n", k->name, k->def_s);
		else if (k->type == KT_LIST)
			fprintf(f, "# %s = []\n", k->name);
		else
			fprintf(f, "# %s = %lld\n", k->name,
				(long long)k->def_i);
	}
}

void
config_print_example(FILE *f)
{
	struct config *def = NULL;
	const char *table = NULL;
	char line[512], var[160], kind[96];

	fputs("# Sextant configuration: every key with its default value.\n"
	      "#\n"
	      "# Generated from the key table in lib/conf/config.c; a unit "
	      "test\n"
	      "# checks this file still matches it.\n"
	      "# Each key can also be set from the environment as\n"
	      "# SEXTANT_<TABLE>_<KEY> (dots become '_', upper case; lists "
	      "are\n"
	      "# comma-separated), which overrides this file.  Keys marked\n"
	      "# \"reloadable\" take effect on SIGHUP; the rest need a "
	      "restart.\n",
	      f);
	if (config_defaults(&def) != STATUS_OK)
		return;
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key_def *k = &keys[i];

		if (!table || strcmp(table, k->table) != 0) {
			table = k->table;
			fprintf(f, "\n[%s]\n", table);
		}
		env_name(k, var, sizeof(var));
		example_kind(k, kind, sizeof(kind));
		snprintf(line, sizeof(line), "%s; env %s%s%s", kind, var,
			 k->flags & K_RELOAD ? "; reloadable" : "",
			 k->flags & K_SECRET ? "; secret" : "");
		fputc('\n', f);
		print_comment(f, k->doc);
		print_comment(f, line);
		print_value(f, def, k, false);
	}
	config_free(def);
	print_instances_example(f);
}

/* ---- reload ------------------------------------------------------------ */

bool
config_key_reloadable(const char *dotted)
{
	const struct key_def *k = dotted ? find_dotted(dotted) : NULL;

	return k && (k->flags & K_RELOAD);
}

static bool
same_value(const struct config *a, const struct config *b,
	   const struct key_def *k)
{
	const void *pa = cfield(a, k), *pb = cfield(b, k);

	switch (k->type) {
	case KT_STRING:
		return strcmp(*(char *const *)pa, *(char *const *)pb) == 0;
	case KT_INT: return *(const int *)pa == *(const int *)pb;
	case KT_INT64: return *(const int64_t *)pa == *(const int64_t *)pb;
	case KT_PCT: return *(const double *)pa == *(const double *)pb;
	case KT_BOOL: return *(const bool *)pa == *(const bool *)pb;
	case KT_LOGLEVEL:
		return *(const enum config_log_level *)pa ==
		       *(const enum config_log_level *)pb;
	case KT_LIST: return strlist_same(pa, pb);
	}
	return false;
}

static bool
instances_same(const struct config *a, const struct config *b)
{
	if (a->instances.n != b->instances.n)
		return false;
	for (size_t i = 0; i < a->instances.n; i++) {
		const struct config_instance *x = &a->instances.v[i],
					     *y = &b->instances.v[i];

		if (x->kind != y->kind || strcmp(x->name, y->name) != 0)
			return false;
		for (size_t j = 0; j < NINSTKEYS; j++) {
			const struct key_def *k = &instance_keys[j];
			const void *p = ifield(x, k), *q = ifield(y, k);

			if (k->type == KT_LIST) {
				if (!strlist_same(p, q))
					return false;
				continue;
			}
			if (k->type == KT_STRING
				    ? strcmp(*(char *const *)p,
					     *(char *const *)q) != 0
			    : k->type == KT_INT
				    ? *(const int *)p != *(const int *)q
				    : *(const int64_t *)p !=
					      *(const int64_t *)q)
				return false;
		}
	}
	return true;
}

size_t
config_diff_nonreloadable(const struct config *a, const struct config *b,
			  char *out, size_t len)
{
	size_t count = 0, used = 0;
	char name[160];

	if (out && len)
		out[0] = '\0';
	for (size_t i = 0; i < NKEYS; i++) {
		if ((keys[i].flags & K_RELOAD) || same_value(a, b, &keys[i]))
			continue;
		dotted_name(&keys[i], name, sizeof(name));
		if (out && used < len) {
			snprintf(out + used, len - used, "%s%s",
				 count ? ", " : "", name);
			used = strlen(out);
		}
		count++;
	}
	if (!instances_same(a, b)) {
		if (out && used < len)
			snprintf(out + used, len - used, "%s%s",
				 count ? ", " : "",
				 "[grafana.*]/[prometheus.*]");
		count++;
	}
	return count;
}
