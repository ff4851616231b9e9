/*
 * config.h - Sextant's configuration: one table of typed keys.
 *
 * Every key has a TOML table, a name, a type, a default, bounds and a doc
 * line; that table (config.c) drives parsing, validation, environment
 * overrides, `sextant check-config` output and config.example.toml.
 * The struct below is a plain value: config_load() fills one, the caller
 * frees it with config_free().  Nothing here is global.
 */
#ifndef SEXTANT_CONFIG_H
#define SEXTANT_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/status.h"

/* A list of strings from a TOML array of strings.  Owned by the config. */
struct strlist {
	char **v;
	size_t n;
};

/* Log levels, shared with lib/base/log (same numbering). */
enum config_log_level {
	CONFIG_LOG_DEBUG = 0,
	CONFIG_LOG_INFO = 1,
	CONFIG_LOG_WARN = 2,
	CONFIG_LOG_ERROR = 3,
};

/*
 * One [grafana.<name>] or [prometheus.<name>] table: a metrics instance
 * query_grafana_metrics asks (lib/prom/grafana).  Its keys have their own table
 * in config.c (same types, defaults, bounds and docs as the others); they
 * have no environment overrides and need a restart to change.
 */
enum config_instance_kind {
	CONFIG_INSTANCE_GRAFANA,    /* Grafana's API and data source proxy */
	CONFIG_INSTANCE_PROMETHEUS, /* a Prometheus HTTP API, directly */
};
#define CONFIG_MAX_METRICS_INSTANCES 16
struct config_instance {
	char *name; /* the table's key, what the tool's instance takes */
	enum config_instance_kind kind;
	int line; /* of its table in the file: instances keep file order */
	char *url;
	char *datasource_uid;  /* grafana only */
	char *datasource_name; /* grafana only */
	char *token;	       /* secret: masked when printed */
	char *token_file;
	char *ca_file;
	int connect_timeout_ms;
	int timeout_ms;
	int64_t max_response_bytes;
	int max_concurrent;
	int queue_timeout_ms;
	int retries;
	int retry_base_ms;
	int breaker_failures;
	int breaker_cooldown_s;
	int names_ttl_s;
	int metadata_ttl_s;
	/* query_metrics' [Prometheus] source: the services whose call
	 * histograms this instance holds ("name", "name=<label value>", or
	 * "*" for every service), the label naming the service, and the
	 * histograms of HTTP, gRPC and SQL calls */
	struct strlist services;
	char *service_label;
	char *http_metric;
	char *grpc_metric;
	char *sql_metric;
};

struct config {
	struct {
		char *listen; /* "127.0.0.1:8080"; "[::1]:8080" for v6 */
		int threads;  /* MHD polling threads (epoll), 0 = ncpu */
		int64_t max_body_bytes; /* request body cap; 413 beyond (4 MiB) */
		int64_t max_header_bytes; /* MHD connection memory limit (header size) */
		int connection_timeout_s; /* idle HTTP connection timeout */
		int max_connections;	  /* concurrent HTTP connections */
		int max_sessions;	  /* live MCP sessions */
		int session_idle_timeout_s; /* idle MCP sessions expire after this */
		int max_streams_per_session; /* concurrent SSE streams per session */
		int list_page_size;  /* items per page of the list methods */
		int sse_keepalive_s; /* ": keepalive" comment period */
		int sse_retry_ms;    /* SSE retry field sent to clients */
		int sse_replay_events; /* events kept per stream for Last-Event-ID */
		int64_t sse_replay_bytes; /* bytes kept per stream for Last-Event-ID */
		int shutdown_grace_s; /* SIGTERM: time given to in-flight calls */
		struct strlist
			allowed_origins; /* Origin values allowed (besides loopback forms when listening on loopback) */
		struct strlist
			allowed_hosts; /* Host values allowed (same rule) */
		char *state_key_file; /* requestState sealing secret, "" = random */
		char *tls_cert; /* [server.tls] cert: PEM file path, "" = no TLS */
		char *tls_key; /* [server.tls] key: PEM file path (secret path, not masked) */
	} server;
	struct {
		int threads;		      /* tool worker threads */
		int queue_size;		      /* pending jobs before 503 */
		int call_timeout_s;	      /* hard limit on one tool call */
		int client_request_timeout_s; /* sampling/elicitation/roots wait */
	} workers;
	struct {
		struct strlist
			keys; /* "sha256:<64 hex>" hashes of API keys; empty = auth off */
	} auth;
	struct {
		enum config_log_level
			level; /* "debug" | "info" | "warn" | "error" */
	} log;
	struct {
		struct strlist
			enabled_sets; /* tool sets enabled; empty = all but "conformance" */
		struct strlist disabled; /* tool names disabled */
		bool deprecated_aliases; /* list the "deprecated" set too */
		int max_answer_chars;	 /* text budget of one tool answer */
		int max_answer_bytes;	 /* the whole answer as JSON: text and
					 structuredContent */
	} tools;
	struct {
		struct strlist keys;   /* attribute key substrings hidden */
		struct strlist values; /* regexes hidden inside values */
		bool emails; /* also hide e-mail addresses in values */
	} redact;
	struct {
		bool enabled; /* register the conformance-suite fixtures */
	} conformance;
	struct {
		char *url; /* libpq connection string (secret: masked) */
		int pool_size;
		int acquire_queue; /* 0: PG_DEFAULT_QUEUE_PER_CONN each */
		int statement_timeout_ms;
		bool auto_migrate;
		int retention_days; /* spans and metric points kept (days) */
		char *timescaledb;  /* "auto" | "on" | "off" */
		int partition_days_ahead; /* day partitions made past today */
		int maintain_interval_s;  /* partition upkeep period in serve */
	} database;
	struct {
		char *store;	       /* "auto" | "database" | "memory" */
		int store_threads;     /* store jobs, each with a connection */
		int store_timeout_ms;  /* 503 beyond */
		int replica_timeout_s; /* heartbeat age of a dead replica */
		int cache_idle_s;      /* resident copies shed streams after */
		int stream_keep_s;     /* finished streams kept for replay */
	} sessions;
	struct {
		bool enabled; /* OTLP/HTTP on /v1/traces, /v1/metrics */
		struct strlist
			keys; /* API key hashes for ingestion; empty = open */
		int64_t max_body_bytes;		/* body as sent; 413 beyond */
		int64_t max_decompressed_bytes; /* after gzip; 413 beyond */
		int max_items;		       /* spans or points per request */
		struct strlist ebpf_sdk_names; /* empty = built-in list */
		struct strlist ebpf_scope_prefixes; /* empty = built-in list */
	} ingest;
	struct {
		/* request-health tolerances, percentages (Kiali's defaults) */
		double error_degraded, error_unhealthy;
		double client_error_degraded, client_error_unhealthy;
	} health;
	struct {
		/* get_action_ui's links into other consoles; "" = none */
		char *grafana_url;	  /* Grafana's address */
		char *grafana_datasource; /* uid of the Tempo data source */
		char *kiali_url;	  /* Kiali's address and web root */
		char *jaeger_url;	  /* Jaeger UI's address */
	} links;
	struct {
		/* manage_istio_config's Kubernetes API (lib/kube) */
		char *api_url;	  /* "" = in-cluster (KUBERNETES_SERVICE_*) */
		char *token_file; /* "" = the service account's, if any */
		char *ca_file;	  /* "" = the service account's in a pod */
		int timeout_ms;
		bool allow_writes; /* create, patch, delete at all */
		struct strlist allowed_groups; /* API groups reached */
		struct strlist allowed_kinds;  /* kinds written; empty = any */
		struct strlist allowed_namespaces; /* written; empty = any */
	} kubernetes;
	struct {
		/* origins given CORS headers on /api/ (server/rest) */
		struct strlist allowed_origins;
	} rest;
	struct {
		/* [auth.oauth]: OAuth 2.1 access tokens (lib/oauth) */
		bool enabled;
		char *resource; /* canonical URL of /mcp (RFC 8707, 9728) */
		char *issuer;	/* iss, and where discovery starts */
		struct strlist authorization_servers; /* empty = [issuer] */
		char *jwks_uri; /* "" = discovered from issuer */
		char *audience; /* "" = resource */
		struct strlist algorithms;
		bool accept_generic_typ; /* typ "JWT" besides "at+jwt" */
		int leeway_s;
		int jwks_refetch_s;
		int timeout_ms;
		char *ca_file;
		char *introspection_endpoint; /* "" = opaque tokens refused */
		char *introspection_client_id;
		char *introspection_client_secret_file;
		int introspection_cache_s;
		int cache_entries;
		char *scope_read;
		char *scope_ingest;
		char *scope_write;
		struct strlist write_tools; /* tools or tool sets */
		char *resource_documentation;
	} oauth;
	struct {
		bool enabled; /* the web console at /ui/ (server/rest/ui.c) */
	} ui;
	struct {
		/* [grafana.*] and [prometheus.*] in file order; v[0] is the
		 * default instance */
		struct config_instance *v;
		size_t n;
	} instances; /* [grafana.*] and [prometheus.*], in file order */
};

/* Error detail: file:line:column, the key, and a message (lowercase). */
struct config_error {
	char file[256];
	int line, column; /* 1-based; 0 when not from a file position */
	char key[128];	  /* "server.listen", or "" */
	char msg[512]; /* e.g. "expected an integer between 1 and 1024, got \"abc\"" */
};

/* Formats err as "file:line:col: key: msg" (parts omitted when empty). */
void config_error_format(const struct config_error *err, char *buf, size_t len);

/* Fills *out with every default.  Caller frees with config_free(). */
int config_defaults(struct config **out) WUR;

/*
 * Loads path (NULL = defaults only), then applies environment overrides
 * SEXTANT_<TABLE>_<KEY> (e.g. SEXTANT_SERVER_MAX_BODY_BYTES,
 * SEXTANT_SERVER_TLS_CERT, lists as comma-separated), then DATABASE_URL and
 * SEXTANT_LISTEN.  Unknown keys, wrong types and out-of-range values fail
 * with STATUS_INVALID and *err filled; *out is NULL on failure.
 * envp: the environment to read (NULL = environ), so tests can pass their own.
 */
int config_load(const char *path, char *const *envp, struct config **out,
		struct config_error *err) WUR;

/* Config files larger than this are refused: a real one is a few KiB, and
 * the bound keeps a wrong path (a log file, a device) from being slurped. */
#define CONFIG_MAX_FILE_BYTES (1024 * 1024)

/*
 * config_load() from text already in memory (len bytes, need not be
 * NUL-terminated; NULL = no file, defaults and environment only).  name is
 * the file name used in messages (NULL = "config").  Same contract as
 * config_load(); config_load() reads the file and calls this.
 */
int config_load_text(const char *text, size_t len, const char *name,
		     char *const *envp, struct config **out,
		     struct config_error *err) WUR;

/* True for "table.key" names a SIGHUP reload applies at run time:
 * log.level, tools.*, auth.keys.  False for every other or unknown key. */
bool config_key_reloadable(const char *dotted);

/*
 * Compares every key that is not reloadable.  Returns how many differ and
 * writes their names into keys, comma-separated ("server.listen,
 * workers.threads"), truncated to len.  A reload that finds a non-zero
 * count logs "restart needed for <keys>" and keeps the old values.
 */
size_t config_diff_nonreloadable(const struct config *a, const struct config *b,
				 char *keys, size_t len);

/* Frees a config from config_load/config_defaults.  Accepts NULL. */
void config_free(struct config *cfg);

/* Prints the effective config as TOML, secrets masked ("****"). */
void config_print(const struct config *cfg, FILE *f);

/* Prints the documented example (every key, its default, its doc line). */
void config_print_example(FILE *f);

/* "debug" -> CONFIG_LOG_DEBUG ...; -1 for an unknown name. */
int config_log_level_parse(const char *s);
const char *config_log_level_name(enum config_log_level level);

/* Splits "host:port" / "[v6]:port" into host (no brackets) and port. */
int config_parse_listen(const char *listen, char *host, size_t hostlen,
			int *port) WUR;

#endif
