/*
 * main.c - the sextant command: serve, stdio, check-config, hash-key,
 * openapi.
 *
 * The main thread owns the signals: every other thread starts with them
 * blocked, and the main loop waits for them with sigtimedwait, doing the
 * janitor's once-a-second work in between.  SIGHUP reloads, SIGTERM and
 * SIGINT drain: new requests are answered 503 (probes still served), calls
 * in flight get the grace period, then are cancelled and answered with an
 * error, the streams end, exit 0.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "boot/boot.h"

#include "base/auth.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"
#include "conf/config.h"
#include "core/demo_data.h"
#include "core/maintain.h"
#include "core/server.h"
#include "http/http.h"
#include "mcp/call.h"
#include "mcp/session.h"
#include "mcp/sessstore.h"
#include "mcp/tools.h"
#include "rest/openapi.h"
#include "rest/rest.h"
#include "rest/ui.h"
#include "transport/legacy_sse.h"
#include "transport/stdio_mcp.h"
#include "transport/transport.h"

/* Exit codes (documented in --help and README). */
enum {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1, /* could not start or failed while serving */
	EXIT_USAGE = 2,	  /* bad command line or invalid configuration */
};

/* The MCP transports the HTTP front end serves. */
static const struct http_routes mcp_routes = {
	.mcp = transport_mcp,
	.sse = legacy_sse_open,
	.messages = legacy_sse_post,
	.rest = rest_handle,
	.rest_refuse = rest_refuse,
	.rest_origin = rest_origin_allowed,
	.ui = ui_handle,
};

static void
usage(FILE *f)
{
	fprintf(f,
		"usage: sextant <command> [options]\n"
		"\n"
		"commands:\n"
		"  serve [--config FILE]    serve MCP on the configured "
		"address\n"
		"  stdio [--config FILE]    serve one MCP session on standard "
		"input and output\n"
		"                           (for clients that launch servers; "
		"logs go to stderr)\n"
		"  check-config FILE        validate FILE and print the "
		"effective config\n"
		"                           (environment overrides applied, "
		"secrets masked)\n"
		"  hash-key [KEY]           print the sha256 hash of an API "
		"key "
		"for [auth] keys\n"
		"                           (reads KEY from standard input "
		"when "
		"not given)\n"
		"  migrate [--config FILE]  apply the database migrations and "
		"exit\n"
		"  maintain [--config FILE] create and drop day partitions, "
		"prune and recompute\n"
		"                           the hourly and minute rollups, and "
		"exit\n"
		"  demo-data [--spans N] [--seed S] [--config FILE]\n"
		"                           load a deterministic demo dataset "
		"(last 24 hours)\n"
		"  example-config           print a config file documenting "
		"every key\n"
		"  openapi [--config FILE]  print the REST API's OpenAPI "
		"document for the\n"
		"                           tools the config enables\n"
		"  --version                print the version\n"
		"  --help                   print this help\n"
		"\n"
		"environment: SEXTANT_<TABLE>_<KEY> overrides any key (e.g. "
		"SEXTANT_LOG_LEVEL=debug),\n"
		"SEXTANT_LISTEN overrides server.listen, DATABASE_URL "
		"database.url.\n"
		"\n"
		"exit status: 0 ok, 1 runtime failure (cannot listen, fatal "
		"error), 2 usage or\n"
		"configuration error.\n");
}

static int
load_config(const char *path, struct config **cfg)
{
	struct config_error err;
	char msg[1024];

	if (config_load(path, NULL, cfg, &err) != STATUS_OK) {
		config_error_format(&err, msg, sizeof(msg));
		fprintf(stderr, "sextant: invalid configuration: %s\n", msg);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

static int
cmd_check_config(int argc, char **argv)
{
	struct config *cfg = NULL;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: sextant check-config FILE\n");
		return EXIT_USAGE;
	}
	rc = load_config(argv[2], &cfg);
	if (rc != EXIT_OK)
		return rc;
	config_print(cfg, stdout);
	config_free(cfg);
	return EXIT_OK;
}

static int
cmd_hash_key(int argc, char **argv)
{
	char line[4096], out[AUTH_HASH_LEN + 1];
	const char *key;
	size_t len;

	if (argc > 3) {
		fprintf(stderr, "usage: sextant hash-key [KEY]\n");
		return EXIT_USAGE;
	}
	if (argc == 3) {
		key = argv[2];
	} else {
		if (fgets(line, sizeof(line), stdin) == NULL) {
			fprintf(stderr, "sextant: hash-key: no key on standard "
					"input\n");
			return EXIT_USAGE;
		}
		line[strcspn(line, "\r\n")] = '\0';
		key = line;
	}
	len = strlen(key);
	if (len == 0) {
		fprintf(stderr, "sextant: hash-key: the key is empty\n");
		return EXIT_USAGE;
	}
	if (auth_hash_key(key, len, out) != STATUS_OK) {
		fprintf(stderr, "sextant: hash-key: hashing failed\n");
		return EXIT_RUNTIME;
	}
	printf("%s\n", out);
	return EXIT_OK;
}

/* openapi: the document GET /api/openapi.json serves, for these tools. */
/*
 * The one option of the commands that read a config: "--config FILE".
 * *path: FILE, or NULL when not given.  Prints the usage of argv[1] and
 * returns false on anything else.
 */
static bool
config_arg(int argc, char **argv, const char **path)
{
	*path = NULL;
	if (argc == 4 && strcmp(argv[2], "--config") == 0)
		*path = argv[3];
	else if (argc != 2) {
		fprintf(stderr, "usage: sextant %s [--config FILE]\n", argv[1]);
		return false;
	}
	return true;
}

static int
cmd_openapi(int argc, char **argv)
{
	struct config *cfg = NULL;
	struct tools *tools = NULL;
	const char *path = NULL;
	json_t *doc = NULL;
	char err[1024];
	int rc;

	if (!config_arg(argc, argv, &path))
		return EXIT_USAGE;
	rc = load_config(path, &cfg);
	if (rc != EXIT_OK)
		return rc;
	if (tools_load(boot_tool_families, cfg, &tools, err, sizeof(err)) !=
		    STATUS_OK ||
	    openapi_build(tools, cfg, &doc, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "sextant: openapi: %s\n", err);
		rc = EXIT_USAGE;
	} else if (json_dumpf(doc, stdout, JSON_INDENT(2)) != 0 ||
		   fputc('\n', stdout) == EOF || fflush(stdout) != 0) {
		fprintf(stderr,
			"sextant: openapi: cannot write the document\n");
		rc = EXIT_RUNTIME;
	}
	json_decref(doc);
	tools_unref(tools);
	config_free(cfg);
	return rc;
}

/* migrate and maintain: load the config, need a database, run one step. */
static int
cmd_database(int argc, char **argv, bool maintain)
{
	struct config *cfg = NULL;
	const char *path = NULL;
	char err[1024];
	int rc, applied = 0;

	if (!config_arg(argc, argv, &path))
		return EXIT_USAGE;
	rc = load_config(path, &cfg);
	if (rc != EXIT_OK)
		return rc;
	if (cfg->database.url[0] == '\0') {
		fprintf(stderr,
			"sextant: %s: no database: set DATABASE_URL or "
			"[database] url\n",
			argv[1]);
		config_free(cfg);
		return EXIT_USAGE;
	}
	rc = maintain ? maintain_all(cfg, err, sizeof(err))
		      : maintain_migrate(cfg, &applied, err, sizeof(err));
	config_free(cfg);
	if (rc != STATUS_OK) {
		fprintf(stderr, "sextant: %s: %s\n", argv[1], err);
		return EXIT_RUNTIME;
	}
	if (maintain)
		printf("partitions and rollups up to date\n");
	else
		printf("%d migration(s) applied\n", applied);
	return EXIT_OK;
}

static void
drain(struct server *srv)
{
	struct log_fields f = {.duration_ms = -1};
	int grace_ms = srv->cfg->server.shutdown_grace_s * 1000;
	int64_t deadline = clock_mono_ms() + grace_ms;

	/* from here new requests get 503 + Retry-After, probes their answer:
	 * the listening socket is served until the process exits */
	atomic_store(&srv->draining, true);
	log_info(&f,
		 "draining: new requests refused, waiting up to %d s for "
		 "%d tool call(s)",
		 srv->cfg->server.shutdown_grace_s,
		 pool_busy(srv->pool) + pool_queue_depth(srv->pool));
	while (pool_busy(srv->pool) + pool_queue_depth(srv->pool) > 0 &&
	       clock_mono_ms() < deadline) {
		struct timespec ts = {0, 20 * 1000000L};

		nanosleep(&ts, NULL);
	}
	/* Cancel what still runs while the sessions are open, so that each
	 * call's error answer (call.c: "cancelled by shutdown", with its id)
	 * still reaches its JSON reply or event stream. */
	session_table_foreach(srv->sessions, call_cancel_session, NULL);
	session_table_foreach(srv->requests, call_cancel_session, NULL);
	if (pool_drain(srv->pool, 5000) != STATUS_OK)
		log_warn(&f, "some tool calls ignored cancellation");
	/* shared sessions: store what is left (those answers: a shared
	 * stream shows only what is stored, and a closed session's stream
	 * ends at what it can show), then let another replica end what we
	 * leave open */
	sessstore_drain(srv->store);
	/* close every session: streams flush what they hold and end, parked
	 * connections are resumed and answered */
	session_table_close_all(srv->sessions);
	session_table_close_all(srv->requests);
	legacy_sse_close_all();
	/* Let the answers resumed above go out, and the event streams flush
	 * their last events and end (each reader ends once drained), bounded:
	 * a stalled client must not hold the exit. */
	deadline = clock_mono_ms() + 3000;
	while ((expo_value(srv->m.sse_streams) > 0 ||
		expo_value(srv->m.inflight) > 0) &&
	       clock_mono_ms() < deadline) {
		struct timespec ts = {0, 10 * 1000000L};

		nanosleep(&ts, NULL);
	}
	http_stop(srv);
}

/*
 * Every connection is a descriptor: raise the soft open-file limit to the
 * hard one, so that server.max_connections (and the connections evicted
 * past it, not closed yet) fit beside the database pool.  http_start
 * sizes MHD's own limit from what is left.
 */
static void
raise_nofile(void)
{
	struct log_fields f = {.duration_ms = -1};
	struct rlimit rl;
	rlim_t was;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	was = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
		log_warn(&f, "open-file limit left at %llu: %m",
			 (unsigned long long)was);
	else
		log_info(&f, "open-file limit raised from %llu to %llu",
			 (unsigned long long)was,
			 (unsigned long long)rl.rlim_cur);
}

/*
 * What serve and stdio do first: the config; SIGTERM, SIGINT, SIGHUP and
 * SIGPIPE blocked into *set before any thread exists, so that all inherit
 * the mask (serve waits for them with sigtimedwait, stdio reads them from
 * a signalfd); the migrations when database.auto_migrate, where a database
 * that is down now is not fatal (/readyz says so and ingestion answers 503
 * until it is back); then boot_init.  *path: the config file or NULL.
 * EXIT_OK, or an exit status after a message on stderr (srv then needs
 * no boot_free).
 */
static int
boot_command(int argc, char **argv, struct server *srv, sigset_t *set,
	     const char **path)
{
	struct log_fields f = {.duration_ms = -1};
	struct config *cfg = NULL;
	bool migrated = false;
	char err[1024];
	int rc;

	if (!config_arg(argc, argv, path))
		return EXIT_USAGE;
	rc = load_config(*path, &cfg);
	if (rc != EXIT_OK)
		return rc;
	sigemptyset(set);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, set, NULL);
	if (cfg->database.url[0] != '\0' && cfg->database.auto_migrate) {
		int applied = 0;

		if (maintain_migrate(cfg, &applied, err, sizeof(err)) !=
		    STATUS_OK)
			log_error(&f, "migrations not applied: %s", err);
		else {
			migrated = true;
			if (applied > 0)
				log_info(&f, "%d migration(s) applied",
					 applied);
		}
	}
	if (boot_init(srv, cfg, *path, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "sextant: %s\n", err);
		boot_free(srv);
		return EXIT_USAGE;
	}
	srv->migrated = migrated;
	return EXIT_OK;
}

static int
cmd_serve(int argc, char **argv)
{
	struct server srv;
	const char *path = NULL;
	char err[1024];
	sigset_t set;
	int rc, sig;
	struct log_fields f = {.duration_ms = -1};

	rc = boot_command(argc, argv, &srv, &set, &path);
	if (rc != EXIT_OK)
		return rc;
	if (sessstore_wanted(&srv) &&
	    sessstore_new(&srv, &srv.store, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "sextant: %s\n", err);
		boot_free(&srv);
		return EXIT_USAGE;
	}
	raise_nofile();
	if (rest_init(&srv) != STATUS_OK) {
		log_error(&f, "cannot start the REST facade: out of memory or "
			      "threads");
		boot_free(&srv);
		return EXIT_RUNTIME;
	}
	if (http_start(&srv, &mcp_routes, err, sizeof(err)) != STATUS_OK) {
		log_error(&f, "%s", err);
		boot_free(&srv);
		return EXIT_RUNTIME;
	}
	{
		char host[256];
		int port;

		if (config_parse_listen(srv.cfg->server.listen, host,
					sizeof(host), &port) != STATUS_OK)
			host[0] = '\0';
		server_live_rdlock(&srv);
		log_info(&f,
			 "sextant %s listening on %s://%s%s%s:%d/mcp with %zu "
			 "tools",
			 SEXTANT_VERSION,
			 srv.cfg->server.tls_cert[0] != '\0' ? "https" : "http",
			 strchr(host, ':') != NULL ? "[" : "", host,
			 strchr(host, ':') != NULL ? "]" : "", http_port(&srv),
			 tools_count(srv.tools));
		server_live_unlock(&srv);
	}
	for (;;) {
		struct timespec tick = {1, 0};

		sig = sigtimedwait(&set, NULL, &tick);
		if (sig < 0) {
			if (errno == EAGAIN) {
				boot_tick(&srv);
				legacy_sse_tick(&srv, clock_mono_ms());
			}
			continue;
		}
		if (sig == SIGHUP) {
			log_info(&f, "SIGHUP: reloading %s",
				 path != NULL ? path : "(defaults)");
			boot_reload(&srv);
		} else if (sig == SIGTERM || sig == SIGINT) {
			log_info(&f, "%s: shutting down",
				 sig == SIGTERM ? "SIGTERM" : "SIGINT");
			break;
		}
	}
	drain(&srv);
	boot_free(&srv);
	log_info(&f, "stopped");
	return EXIT_OK;
}

/*
 * `sextant stdio`: one session on standard input and output.  Everything
 * but the HTTP daemon is set up as for serve; standard output carries
 * protocol messages only, so even start-up errors go to stderr.
 */
static int
cmd_stdio(int argc, char **argv)
{
	struct server srv;
	const char *path = NULL;
	sigset_t set;
	int rc;
	struct log_fields f = {.duration_ms = -1};

	rc = boot_command(argc, argv, &srv, &set, &path);
	if (rc != EXIT_OK)
		return rc;
	rc = stdio_mcp_serve(&srv, STDIN_FILENO, STDOUT_FILENO, &set);
	boot_free(&srv);
	log_info(&f, "stopped");
	return rc == STATUS_OK ? EXIT_OK : EXIT_RUNTIME;
}

int
main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0 ||
	    strcmp(argv[1], "version") == 0) {
		char revisions[256];

		boot_revisions(revisions, sizeof(revisions));
		printf("sextant %s\nMCP revisions: %s\n", SEXTANT_VERSION,
		       revisions);
		return EXIT_OK;
	}
	if (strcmp(argv[1], "serve") == 0)
		return cmd_serve(argc, argv);
	if (strcmp(argv[1], "stdio") == 0)
		return cmd_stdio(argc, argv);
	if (strcmp(argv[1], "migrate") == 0)
		return cmd_database(argc, argv, false);
	if (strcmp(argv[1], "maintain") == 0)
		return cmd_database(argc, argv, true);
	if (strcmp(argv[1], "demo-data") == 0)
		return demo_data_main(argc, argv);
	if (strcmp(argv[1], "check-config") == 0)
		return cmd_check_config(argc, argv);
	if (strcmp(argv[1], "hash-key") == 0)
		return cmd_hash_key(argc, argv);
	if (strcmp(argv[1], "openapi") == 0)
		return cmd_openapi(argc, argv);
	if (strcmp(argv[1], "example-config") == 0) {
		config_print_example(stdout);
		return EXIT_OK;
	}
	fprintf(stderr, "sextant: unknown command \"%s\"\n\n", argv[1]);
	usage(stderr);
	return EXIT_USAGE;
}
