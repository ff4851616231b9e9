/*
 * server.h - the gateway's shared context: configuration, sessions, the
 * worker pool, the tool registry, metrics and the live (reloadable)
 * settings.  One instance lives in main.c, built by server/boot.c, and is
 * handed to every server/ room; lib/ modules never see it.  This header
 * names no other room: every room may include it.
 */
#ifndef SEXTANT_SERVER_H
#define SEXTANT_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/expo.h"
#include "base/status.h"
#include "conf/config.h"
#include "otlp/otlp.h"

struct session_table;
struct pool;
struct tools;
struct auth_keys;
struct oauth;
struct MHD_Daemon;
struct pg_pool;
struct instances;
struct redact;
struct catalog;

/* Metric children resolved once at start-up (hot path: no lookups). */
struct server_expo {
	struct expo_family *http_requests; /* route, code */
	struct expo_family *rpc_requests;  /* method */
	struct expo_family *rpc_duration;  /* method (histogram) */
	struct expo_family *rpc_errors;	   /* code */
	struct expo_family *tool_calls;	   /* tool, outcome */
	struct expo_family *tool_duration; /* tool (histogram) */
	struct expo_series *inflight;	   /* gauge */
	struct expo_series *sse_streams;   /* gauge: open SSE connections */
	struct expo_series *reloads_ok, *reloads_failed;
	struct expo_family *ingest_items; /* signal, outcome */
};

struct server {
	struct config *cfg; /* start-up config; reloadable parts live below */
	const char *config_path; /* for SIGHUP reloads; NULL = defaults */
	struct session_table *sessions;
	/* 2026-07-28 requests' own sessions (session_create_request): one
	 * per request in flight, never looked up by id */
	struct session_table *requests;
	/* seals 2026-07-28 requestState (lib/base/seal): a key per process */
	struct seal *seal;
	/* 2026-07-28 tasks extension (tasks.c) */
	struct task_table *tasks;
	struct pool *pool;
	struct expo *
		expo; /* /metrics: the gateway's own counters (lib/base/expo) */
	struct server_expo m;
	struct MHD_Daemon *daemon;
	bool loopback;	    /* listening on a loopback address */
	int64_t started_ms; /* monotonic */
	char *last_status;  /* the status resource as last seen (janitor) */
	struct pg_pool *pg; /* NULL without [database] url */
	/* shared 2025 sessions (sessstore.c); NULL: sessions in memory */
	struct sessstore *store;
	struct instances *instances; /* core/instances.c; NULL: none */
	struct otlp_source_rules source_rules; /* [ingest] ebpf_* */
	struct redact *redact; /* [redact]: immutable, shared by workers */
	atomic_bool migrated;  /* auto_migrate done (retried by the janitor) */
	atomic_bool draining;  /* SIGTERM: refuse new work */

	/* Live settings, swapped on SIGHUP under live_lock (readers share). */
	pthread_rwlock_t live_lock;
	struct auth_keys *keys; /* NULL or empty: no auth */
	struct auth_keys
		*ingest_keys; /* the same for /v1/traces, /v1/metrics */
	struct tools *tools;  /* enabled tool set */
	/* [auth.oauth] (lib/oauth): NULL when off; start-up only */
	struct oauth *oauth;
	char *oauth_prm;	 /* the metadata document (RFC 9728), JSON */
	char oauth_prm_url[512]; /* where it is served, for challenges */
	/* resources, templates, prompts (mcp/catalog.c); start-up only */
	struct catalog *catalog;

	/* The janitor tick and the SIGHUP reload (server/boot.c), for a
	 * transport that runs its own loop (stdio). */
	void (*tick)(struct server *srv);
	void (*reload)(struct server *srv);
};

/* Reloadable settings: read under live_lock, for the time of one use. */
void server_live_rdlock(struct server *srv);
void server_live_unlock(struct server *srv);

#endif
