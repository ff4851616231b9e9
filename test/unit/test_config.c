/*
 * test_config.c - lib/conf/config: defaults, loading, errors with positions and
 * suggestions, environment overrides, masking, the example file, reload.
 * Run from the repository root (it reads config.example.toml and
 * test/conformance.toml); SEXTANT_SRCDIR at compile time overrides that.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf/config.h"
#include "conf/toml.h"

#ifndef SEXTANT_SRCDIR
#define SEXTANT_SRCDIR "."
#endif

#define HASH_A                                                                 \
	"sha256:"                                                              \
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HASH_B                                                                 \
	"sha256:"                                                              \
	"ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

static char *no_env[] = {NULL};

static struct config *
load_ok(const char *doc, char *const *envp)
{
	struct config *cfg = NULL;
	struct config_error err;
	char msg[1024];

	if (config_load_text(doc, doc ? strlen(doc) : 0, "t.toml", envp, &cfg,
			     &err) != STATUS_OK) {
		config_error_format(&err, msg, sizeof(msg));
		fail_msg("load failed: %s", msg);
	}
	return cfg;
}

/* Prints cfg with config_print into a malloc'd string. */
static char *
print_to_string(const struct config *cfg, bool example)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	if (example)
		config_print_example(f);
	else
		config_print(cfg, f);
	fclose(f);
	return buf;
}

static char *
read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	size_t n;

	if (!f)
		fail_msg("cannot open %s (tests run from the repo root)", path);
	buf = malloc(1 << 20);
	assert_non_null(buf);
	n = fread(buf, 1, (1 << 20) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void
test_defaults(void **state)
{
	struct config *c = NULL;

	(void)state;
	assert_int_equal(config_defaults(&c), STATUS_OK);
	assert_string_equal(c->server.listen, "127.0.0.1:8080");
	assert_int_equal(c->server.threads, 0);
	assert_int_equal(c->server.max_body_bytes, 4194304);
	assert_int_equal(c->server.max_header_bytes, 16384);
	assert_int_equal(c->server.connection_timeout_s, 60);
	assert_int_equal(c->server.max_connections, 1024);
	assert_int_equal(c->server.max_sessions, 10000);
	assert_int_equal(c->server.session_idle_timeout_s, 1800);
	assert_int_equal(c->server.max_streams_per_session, 8);
	assert_int_equal(c->server.sse_keepalive_s, 15);
	assert_int_equal(c->server.sse_retry_ms, 1000);
	assert_int_equal(c->server.sse_replay_events, 256);
	assert_int_equal(c->server.sse_replay_bytes, 1048576);
	assert_int_equal(c->server.shutdown_grace_s, 10);
	assert_int_equal(c->server.allowed_origins.n, 0);
	assert_int_equal(c->server.allowed_hosts.n, 0);
	assert_string_equal(c->server.tls_cert, "");
	assert_string_equal(c->server.tls_key, "");
	assert_int_equal(c->workers.threads, 8);
	assert_int_equal(c->workers.queue_size, 256);
	assert_int_equal(c->workers.call_timeout_s, 300);
	assert_int_equal(c->workers.client_request_timeout_s, 60);
	assert_int_equal(c->auth.keys.n, 0);
	assert_int_equal(c->log.level, CONFIG_LOG_INFO);
	assert_int_equal(c->tools.enabled_sets.n, 0);
	assert_int_equal(c->tools.disabled.n, 0);
	assert_false(c->conformance.enabled);
	assert_string_equal(c->database.url, "");
	assert_int_equal(c->database.pool_size, 4);
	assert_int_equal(c->database.statement_timeout_ms, 30000);
	assert_true(c->database.auto_migrate);
	config_free(c);
	config_free(NULL);

	/* no file, empty environment: the defaults again */
	c = load_ok(NULL, no_env);
	assert_string_equal(c->server.listen, "127.0.0.1:8080");
	assert_int_equal(c->workers.threads, 8);
	config_free(c);
	/* no path, and err may be NULL */
	assert_int_equal(config_load(NULL, no_env, &c, NULL), STATUS_OK);
	assert_int_equal(c->database.pool_size, 4);
	config_free(c);
}

static const char full_doc[] =
	"[server]\n"
	"listen = \"[::1]:9090\"\n"
	"threads = 4\n"
	"max_body_bytes = 1_048_576\n"
	"max_header_bytes = 8192\n"
	"connection_timeout_s = 30\n"
	"max_connections = 50\n"
	"max_sessions = 60\n"
	"session_idle_timeout_s = 70\n"
	"max_streams_per_session = 2\n"
	"sse_keepalive_s = 5\n"
	"sse_retry_ms = 0\n"
	"sse_replay_events = 10\n"
	"sse_replay_bytes = 2048\n"
	"shutdown_grace_s = 0\n"
	"allowed_origins = [\"https://a.example\", \"https://b.example\"]\n"
	"allowed_hosts = [\"gw.example\"]\n"
	"[server.tls]\n"
	"cert = \"/etc/sextant/cert.pem\"\n"
	"key = \"/etc/sextant/key.pem\"\n"
	"[workers]\n"
	"threads = 16\n"
	"queue_size = 1000\n"
	"call_timeout_s = 120\n"
	"client_request_timeout_s = 30\n"
	"[auth]\n"
	"keys = [\"" HASH_A "\", \"" HASH_B " sextant:read\"]\n"
	"[log]\n"
	"level = \"debug\"\n"
	"[tools]\n"
	"enabled_sets = [\"traces\", \"metrics\"]\n"
	"disabled = [\"sql\"]\n"
	"[conformance]\n"
	"enabled = true\n"
	"[database]\n"
	"url = \"postgresql://sextant:hunter2@db/sextant\"\n"
	"pool_size = 8\n"
	"statement_timeout_ms = 5000\n"
	"auto_migrate = false\n";

static void
test_full_file(void **state)
{
	struct config *c = load_ok(full_doc, no_env);

	(void)state;
	assert_string_equal(c->server.listen, "[::1]:9090");
	assert_int_equal(c->server.threads, 4);
	assert_int_equal(c->server.max_body_bytes, 1048576);
	assert_int_equal(c->server.max_header_bytes, 8192);
	assert_int_equal(c->server.connection_timeout_s, 30);
	assert_int_equal(c->server.max_connections, 50);
	assert_int_equal(c->server.max_sessions, 60);
	assert_int_equal(c->server.session_idle_timeout_s, 70);
	assert_int_equal(c->server.max_streams_per_session, 2);
	assert_int_equal(c->server.sse_keepalive_s, 5);
	assert_int_equal(c->server.sse_retry_ms, 0);
	assert_int_equal(c->server.sse_replay_events, 10);
	assert_int_equal(c->server.sse_replay_bytes, 2048);
	assert_int_equal(c->server.shutdown_grace_s, 0);
	assert_int_equal(c->server.allowed_origins.n, 2);
	assert_string_equal(c->server.allowed_origins.v[1],
			    "https://b.example");
	assert_int_equal(c->server.allowed_hosts.n, 1);
	assert_string_equal(c->server.allowed_hosts.v[0], "gw.example");
	assert_string_equal(c->server.tls_cert, "/etc/sextant/cert.pem");
	assert_string_equal(c->server.tls_key, "/etc/sextant/key.pem");
	assert_int_equal(c->workers.threads, 16);
	assert_int_equal(c->workers.queue_size, 1000);
	assert_int_equal(c->workers.call_timeout_s, 120);
	assert_int_equal(c->workers.client_request_timeout_s, 30);
	assert_int_equal(c->auth.keys.n, 2);
	assert_string_equal(c->auth.keys.v[0], HASH_A);
	assert_string_equal(c->auth.keys.v[1], HASH_B " sextant:read");
	assert_int_equal(c->log.level, CONFIG_LOG_DEBUG);
	assert_int_equal(c->tools.enabled_sets.n, 2);
	assert_string_equal(c->tools.enabled_sets.v[0], "traces");
	assert_int_equal(c->tools.disabled.n, 1);
	assert_true(c->conformance.enabled);
	assert_string_equal(c->database.url,
			    "postgresql://sextant:hunter2@db/sextant");
	assert_int_equal(c->database.pool_size, 8);
	assert_int_equal(c->database.statement_timeout_ms, 5000);
	assert_false(c->database.auto_migrate);
	config_free(c);

	/* [health] percentages: floats and integers; the defaults Kiali's */
	c = load_ok("[health]\nerror_degraded = 0.5\nclient_error_unhealthy = "
		    "30\n",
		    no_env);
	assert_true(c->health.error_degraded == 0.5);
	assert_true(c->health.error_unhealthy == 10);
	assert_true(c->health.client_error_degraded == 10);
	assert_true(c->health.client_error_unhealthy == 30);
	config_free(c);

	/* inline tables and dotted keys are the same document to config */
	c = load_ok("server = {threads = 3, tls.cert = 'c', tls.key = 'k'}\n"
		    "workers.threads = 2\n",
		    no_env);
	assert_int_equal(c->server.threads, 3);
	assert_string_equal(c->server.tls_key, "k");
	assert_int_equal(c->workers.threads, 2);
	config_free(c);
}

struct err_case {
	const char *name;
	const char *doc;
	int status, line, col;
	const char *key;
	const char *msg;    /* substring expected in err.msg */
	const char *absent; /* substring that must not appear (secrets) */
};

static const struct err_case err_cases[] = {
	{"unknown key with suggestion", "[server]\nlisen = 'x'", STATUS_INVALID,
	 2, 1, "server.lisen",
	 "unknown key \"server.lisen\"; did you mean \"server.listen\"?", NULL},
	{"unknown key without suggestion", "[server]\nzzzzzzzzzzzz = 1",
	 STATUS_INVALID, 2, 1, "server.zzzzzzzzzzzz", "unknown key", "did you"},
	{"key in the wrong table", "listen = 'x'", STATUS_INVALID, 1, 1,
	 "listen", "did you mean \"server.listen\"?", NULL},
	{"unknown table", "[servr]\nthreads = 1", STATUS_INVALID, 1, 2, "servr",
	 "unknown key \"servr\" (no such table); did you mean \"server\"?",
	 NULL},
	{"unknown sub-table", "[server.tsl]", STATUS_INVALID, 1, 9,
	 "server.tsl", "did you mean \"server.tls\"?", NULL},
	{"unknown key in sub-table", "[server.tls]\ncrt = 'x'", STATUS_INVALID,
	 2, 1, "server.tls.crt", "did you mean \"server.tls.cert\"?", NULL},
	{"string for integer", "[server]\nthreads = \"four\"", STATUS_INVALID,
	 2, 11, "server.threads",
	 "expected an integer between 0 and 64, got string \"four\"", NULL},
	{"float for integer", "[workers]\nthreads = 1.5", STATUS_INVALID, 2, 11,
	 "workers.threads", "got float 1.5", NULL},
	{"integer for boolean", "[conformance]\nenabled = 1", STATUS_INVALID, 2,
	 11, "conformance.enabled",
	 "expected a boolean (true or false), got integer 1", NULL},
	{"string for list", "[tools]\ndisabled = 'sql'", STATUS_INVALID, 2, 12,
	 "tools.disabled", "expected an array of strings, got string \"sql\"",
	 NULL},
	{"list item not a string", "[tools]\ndisabled = ['a', 2]",
	 STATUS_INVALID, 2, 18, "tools.disabled", "got integer 2 as item 2",
	 NULL},
	{"percentage over 100", "[health]\nerror_unhealthy = 101",
	 STATUS_INVALID, 2, 19, "health.error_unhealthy",
	 "expected a number from 0 to 100 (a percentage), got integer 101",
	 NULL},
	{"string for percentage", "[health]\nerror_degraded = '1%'",
	 STATUS_INVALID, 2, 18, "health.error_degraded", "got string \"1%\"",
	 NULL},
	{"negative percentage", "[health]\nerror_degraded = -0.5",
	 STATUS_INVALID, 2, 18, "health.error_degraded", "got float -0.5",
	 NULL},
	{"boolean for integer", "[server]\nthreads = true", STATUS_INVALID, 2,
	 11, "server.threads", "got boolean true", NULL},
	{"array for integer", "[server]\nthreads = [1]", STATUS_INVALID, 2, 11,
	 "server.threads", "got an array", NULL},
	{"secret list item of the wrong type", "[auth]\nkeys = [true]",
	 STATUS_INVALID, 2, 9, "auth.keys",
	 "expected an array of strings, got a boolean as item 1", "true"},
	{"nul in list item", "[tools]\ndisabled = ['a', \"\\u0000\"]",
	 STATUS_INVALID, 2, 18, "tools.disabled", "must not contain U+0000",
	 NULL},
	{"long unknown key shown safely",
	 "[server]\n\"x\\ty\\u0001zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
	 "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
	 "zzzzzzzzzzzzzzzzzzzzzzzz\" = 1",
	 STATUS_INVALID, 2, 1,
	 "server.x?y?zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz"
	 "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz...",
	 "...\"", "\t"},
	{"value for a table", "server = 1", STATUS_INVALID, 1, 1, "server",
	 "expected a table, got integer 1", NULL},
	{"array of tables for a table", "[[workers]]", STATUS_INVALID, 1, 3,
	 "workers", "expected a table, got an array of tables", NULL},
	{"table for a value", "[server.listen]", STATUS_INVALID, 1, 9,
	 "server.listen", "expected a string, got a table", NULL},
	{"bad log level", "[log]\nlevel = 'verbose'", STATUS_INVALID, 2, 9,
	 "log.level", "one of \"debug\", \"info\", \"warn\", \"error\"", NULL},
	{"below range", "[workers]\nthreads = 0", STATUS_INVALID, 2, 11,
	 "workers.threads",
	 "expected an integer between 1 and 1024, got "
	 "integer 0",
	 NULL},
	{"above range", "[server]\nthreads = 65", STATUS_INVALID, 2, 11,
	 "server.threads", "between 0 and 64, got integer 65", NULL},
	{"int64 above range", "[server]\nmax_body_bytes = 1073741825",
	 STATUS_INVALID, 2, 18, "server.max_body_bytes",
	 "between 1024 and 1073741824", NULL},
	{"bad listen", "[server]\nlisten = '::1:80'", STATUS_INVALID, 2, 10,
	 "server.listen", "expected \"host:port\" or \"[ipv6]:port\"", NULL},
	{"listen port zero", "[server]\nlisten = 'localhost:0'", STATUS_INVALID,
	 2, 10, "server.listen", "between 1 and 65535", NULL},
	{"auth key not a hash", "[auth]\nkeys = ['" HASH_A "', 'sk-secret-1']",
	 STATUS_INVALID, 2, 84, "auth.keys",
	 "item 2: expected \"sha256:\" followed by 64 lowercase hex digits; "
	 "produce one with `sextant hash-key`",
	 "sk-secret-1"},
	{"auth key scope with a quote",
	 "[auth]\nkeys = ['" HASH_A " sextant:read \"x']", STATUS_INVALID, 2, 9,
	 "auth.keys", "a scope after the key hash holds a character", NULL},
	{"auth key upper-case hex",
	 "[auth]\nkeys = ['sha256:"
	 "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef']",
	 STATUS_INVALID, 2, 9, "auth.keys", "lowercase hex", NULL},
	{"secret of the wrong type", "[database]\nurl = 123456789",
	 STATUS_INVALID, 2, 7, "database.url",
	 "expected a string, got an integer", "123456789"},
	{"nul in string", "[server]\nlisten = \"a\\u0000b:80\"", STATUS_INVALID,
	 2, 10, "server.listen", "must not contain U+0000", NULL},
	{"tls cert without key", "[server.tls]\ncert = '/c.pem'",
	 STATUS_INVALID, 0, 0, "server.tls",
	 "cert and key must be set together", NULL},
	{"answer bytes below range", "[tools]\nmax_answer_bytes = 4095",
	 STATUS_INVALID, 2, 20, "tools.max_answer_bytes",
	 "expected an integer between 4096 and 16777216, got integer 4095",
	 NULL},
	{"answer bytes below the text",
	 "[tools]\nmax_answer_chars = 20000\nmax_answer_bytes = 16384",
	 STATUS_INVALID, 0, 0, "tools.max_answer_bytes",
	 "must be at least max_answer_chars (20000), got 16384", NULL},
	{"toml syntax error", "[server]\nthreads = 4\nthreads = 5",
	 STATUS_INVALID, 3, 1, "", "duplicate key server.threads", NULL},
	{"toml date", "[server]\nlisten = 2024-01-01", STATUS_INVALID, 2, 10,
	 "", "dates and times are not supported", NULL},
};

static void
test_errors(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		const struct err_case *c = &err_cases[i];
		struct config *cfg = (struct config *)&cfg;
		struct config_error err;
		int rc = config_load_text(c->doc, strlen(c->doc), "t.toml",
					  no_env, &cfg, &err);

		assert_null(cfg);
		if (rc != c->status || err.line != c->line ||
		    err.column != c->col || strcmp(err.key, c->key) != 0 ||
		    strcmp(err.file, "t.toml") != 0 ||
		    !strstr(err.msg, c->msg) ||
		    (c->absent && strstr(err.msg, c->absent))) {
			print_error("%s: want %d %d:%d [%s] \"%s\"\n"
				    "   got %d %s:%d:%d [%s] \"%s\"\n",
				    c->name, c->status, c->line, c->col, c->key,
				    c->msg, rc, err.file, err.line, err.column,
				    err.key, err.msg);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void
test_env(void **state)
{
	char *env[] = {
		"PATH=/usr/bin",
		"SEXTANT_SERVER_THREADS=12",
		"SEXTANT_SERVER_MAX_BODY_BYTES=2048",
		"SEXTANT_SERVER_TLS_CERT=/c.pem",
		"SEXTANT_SERVER_TLS_KEY=/k.pem",
		"SEXTANT_SERVER_ALLOWED_ORIGINS= https://a , ,https://b,",
		"SEXTANT_AUTH_KEYS=" HASH_A "," HASH_B,
		"SEXTANT_LOG_LEVEL=warn",
		"SEXTANT_TOOLS_DISABLED=",
		"SEXTANT_CONFORMANCE_ENABLED=true",
		"SEXTANT_DATABASE_AUTO_MIGRATE=0",
		"SEXTANT_DATABASE_URL=postgresql://ignored",
		"DATABASE_URL=postgresql://db/x",
		"SEXTANT_SERVER_LISTEN=127.0.0.1:1",
		"SEXTANT_LISTEN=[::1]:7000",
		NULL,
	};
	struct config *c;

	(void)state;
	/* environment beats the file; the two aliases beat both */
	c = load_ok("[server]\nthreads = 3\nlisten = '0.0.0.0:80'\n"
		    "[tools]\ndisabled = ['x']\n",
		    env);
	assert_int_equal(c->server.threads, 12);
	assert_int_equal(c->server.max_body_bytes, 2048);
	assert_string_equal(c->server.tls_cert, "/c.pem");
	assert_string_equal(c->server.tls_key, "/k.pem");
	assert_int_equal(c->server.allowed_origins.n, 2);
	assert_string_equal(c->server.allowed_origins.v[0], "https://a");
	assert_string_equal(c->server.allowed_origins.v[1], "https://b");
	assert_int_equal(c->auth.keys.n, 2);
	assert_string_equal(c->auth.keys.v[1], HASH_B);
	assert_int_equal(c->log.level, CONFIG_LOG_WARN);
	assert_int_equal(c->tools.disabled.n, 0);
	assert_true(c->conformance.enabled);
	assert_false(c->database.auto_migrate);
	assert_string_equal(c->database.url, "postgresql://db/x");
	assert_string_equal(c->server.listen, "[::1]:7000");
	config_free(c);
}

struct env_err_case {
	const char *var; /* "NAME=value" */
	const char *key; /* err.key: the variable */
	const char *msg;
	const char *absent;
};

static const struct env_err_case env_errs[] = {
	{"SEXTANT_SERVER_THREADS=abc", "SEXTANT_SERVER_THREADS",
	 "expected an integer between 0 and 64 (sets server.threads), got "
	 "\"abc\"",
	 NULL},
	{"SEXTANT_SERVER_THREADS=", "SEXTANT_SERVER_THREADS",
	 "expected an integer", NULL},
	{"SEXTANT_SERVER_THREADS= 4", "SEXTANT_SERVER_THREADS",
	 "expected an integer", NULL},
	{"SEXTANT_SERVER_THREADS=4x", "SEXTANT_SERVER_THREADS",
	 "expected an integer", NULL},
	{"SEXTANT_WORKERS_QUEUE_SIZE=99999999999999999999",
	 "SEXTANT_WORKERS_QUEUE_SIZE", "between 1 and 1000000", NULL},
	{"SEXTANT_WORKERS_THREADS=0", "SEXTANT_WORKERS_THREADS",
	 "between 1 and 1024", NULL},
	{"SEXTANT_CONFORMANCE_ENABLED=yes", "SEXTANT_CONFORMANCE_ENABLED",
	 "expected a boolean", NULL},
	{"SEXTANT_HEALTH_ERROR_DEGRADED=1%", "SEXTANT_HEALTH_ERROR_DEGRADED",
	 "expected a number from 0 to 100 (a percentage)", NULL},
	{"SEXTANT_HEALTH_ERROR_UNHEALTHY=nan", "SEXTANT_HEALTH_ERROR_UNHEALTHY",
	 "expected a number from 0 to 100", NULL},
	{"SEXTANT_LOG_LEVEL=trace", "SEXTANT_LOG_LEVEL", "\"debug\"", NULL},
	{"SEXTANT_LISTEN=8080", "SEXTANT_LISTEN",
	 "expected \"host:port\" or \"[ipv6]:port\"", NULL},
	{"SEXTANT_AUTH_KEYS=" HASH_A ",raw-secret", "SEXTANT_AUTH_KEYS",
	 "item 2: expected \"sha256:\"", "raw-secret"},
	{"SEXTANT_SERVER_TLS_CERT=/only-cert.pem", "server.tls",
	 "cert and key must be set together", NULL},
};

static void
test_env_errors(void **state)
{
	int bad = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(env_errs) / sizeof(env_errs[0]); i++) {
		const struct env_err_case *c = &env_errs[i];
		char *env[] = {(char *)c->var, NULL};
		struct config *cfg = (struct config *)&cfg;
		struct config_error err;
		int rc = config_load_text(NULL, 0, NULL, env, &cfg, &err);

		assert_null(cfg);
		if (rc != STATUS_INVALID || strcmp(err.key, c->key) != 0 ||
		    !strstr(err.msg, c->msg) ||
		    (c->absent && strstr(err.msg, c->absent)) ||
		    err.line != 0) {
			print_error(
				"%s: want [%s] \"%s\", got %d [%s] \"%s\"\n",
				c->var, c->key, c->msg, rc, err.key, err.msg);
			bad++;
		}
	}
	assert_int_equal(bad, 0);
}

static void
test_print_masks_secrets(void **state)
{
	struct config *c = load_ok(full_doc, no_env);
	struct toml_value *root = NULL;
	struct toml_error terr;
	char *out = print_to_string(c, false);

	(void)state;
	assert_null(strstr(out, "hunter2"));
	assert_null(strstr(out, "0123456789abcdef"));
	assert_null(strstr(out, "ffffffff"));
	assert_non_null(strstr(out, "\nurl = \"****\"\n"));
	assert_non_null(strstr(out, "\nkeys = [\"****\", \"****\"]\n"));
	/* not secret: shown as is */
	assert_non_null(strstr(out, "\nkey = \"/etc/sextant/key.pem\"\n"));
	assert_non_null(strstr(out, "\nlevel = \"debug\"\n"));
	/* valid TOML */
	if (toml_parse(out, strlen(out), 1 << 20, &root, &terr) != STATUS_OK)
		fail_msg("config_print output is not TOML: %d:%d: %s",
			 terr.line, terr.column, terr.msg);
	assert_string_equal(toml_string(toml_table_get(
				    toml_table_get(root, "database"), "url")),
			    "****");
	toml_free(root);
	free(out);
	config_free(c);

	/* an unset secret prints empty, not masked */
	c = load_ok(NULL, no_env);
	out = print_to_string(c, false);
	assert_non_null(strstr(out, "\nurl = \"\"\n"));
	assert_non_null(strstr(out, "\nkeys = []\n"));
	free(out);
	config_free(c);
}

/* Without secrets, print -> load -> print is the identity, including
 * strings that need escaping. */
static void
test_print_round_trip(void **state)
{
	struct config *a =
		load_ok("[server]\nallowed_hosts = [\"q\\\"uo\\\\te\", "
			"\"tab\\there\\n\\r\\u0001\", 'caf\xc3\xa9']\n"
			"[tools]\nenabled_sets = ['a', 'b']\n",
			no_env);
	struct config *b;
	char *pa = print_to_string(a, false), *pb;
	char name[256];

	(void)state;
	assert_string_equal(a->server.allowed_hosts.v[0], "q\"uo\\te");
	assert_string_equal(a->server.allowed_hosts.v[1], "tab\there\n\r\x01");
	b = load_ok(pa, no_env);
	pb = print_to_string(b, false);
	assert_string_equal(pa, pb);
	assert_int_equal(config_diff_nonreloadable(a, b, name, sizeof(name)),
			 0);
	free(pa);
	free(pb);
	config_free(a);
	config_free(b);
}

/* config.example.toml is exactly config_print_example, and loading it
 * yields the defaults. */
static void
test_example_file(void **state)
{
	char *file = read_file(SEXTANT_SRCDIR "/config.example.toml");
	char *gen = print_to_string(NULL, true), *p1, *p2;
	struct config *c = NULL, *d = NULL;
	struct config_error err;
	char msg[1024];

	(void)state;
	if (strcmp(file, gen) != 0)
		fail_msg("config.example.toml differs from "
			 "config_print_example(): regenerate it");
	if (config_load(SEXTANT_SRCDIR "/config.example.toml", no_env, &c,
			&err) != STATUS_OK) {
		config_error_format(&err, msg, sizeof(msg));
		fail_msg("%s", msg);
	}
	assert_int_equal(config_defaults(&d), STATUS_OK);
	p1 = print_to_string(c, false);
	p2 = print_to_string(d, false);
	assert_string_equal(p1, p2);
	/* every key has a doc line and an env name in the example */
	assert_non_null(strstr(gen, "env SEXTANT_SERVER_TLS_CERT\n"));
	assert_non_null(strstr(gen, "env SEXTANT_AUTH_KEYS; reloadable; "
				    "secret\n"));
	assert_non_null(strstr(gen, "\n[server.tls]\n"));
	for (char *line = gen; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl && nl - line >= 80)
			fail_msg("example line longer than 79 columns: %.*s",
				 (int)(nl - line), line);
		line = nl ? nl + 1 : NULL;
	}
	free(p1);
	free(p2);
	free(file);
	free(gen);
	config_free(c);
	config_free(d);
}

static void
test_conformance_file(void **state)
{
	char *env[] = {"SEXTANT_LISTEN=127.0.0.1:18123", NULL};
	struct config *c = NULL;
	struct config_error err;
	char msg[1024];

	(void)state;
	if (config_load(SEXTANT_SRCDIR "/test/conformance.toml", env, &c,
			&err) != STATUS_OK) {
		config_error_format(&err, msg, sizeof(msg));
		fail_msg("%s", msg);
	}
	assert_true(c->conformance.enabled);
	assert_string_equal(c->server.listen, "127.0.0.1:18123");
	config_free(c);
}

static void
test_load_file_errors(void **state)
{
	struct config *c = (struct config *)&c;
	struct config_error err;
	char path[] = "/tmp/sextant-test-config-XXXXXX";
	int fd;
	FILE *f;

	(void)state;
	assert_int_equal(
		config_load("/nonexistent/sextant.toml", no_env, &c, &err),
		STATUS_IO);
	assert_null(c);
	assert_string_equal(err.file, "/nonexistent/sextant.toml");
	assert_non_null(strstr(err.msg, "cannot open"));

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	for (int i = 0; i <= CONFIG_MAX_FILE_BYTES / 64; i++)
		fprintf(f, "# %061d\n", i);
	fclose(f);
	c = (struct config *)&c;
	assert_int_equal(config_load(path, no_env, &c, &err), STATUS_LIMIT);
	assert_null(c);
	assert_non_null(strstr(err.msg, "larger than"));

	f = fopen(path, "w");
	assert_non_null(f);
	fputs("[server]\nthreads = 2\n[workers]\nthreds = 3\n", f);
	fclose(f);
	assert_int_equal(config_load(path, no_env, &c, &err), STATUS_INVALID);
	assert_string_equal(err.file, path);
	assert_int_equal(err.line, 4);
	assert_int_equal(err.column, 1);
	unlink(path);
}

struct listen_case {
	const char *in;
	int ok;
	const char *host;
	int port;
};

static const struct listen_case listen_cases[] = {
	{"127.0.0.1:8080", 1, "127.0.0.1", 8080},
	{"[::1]:8080", 1, "::1", 8080},
	{"localhost:9000", 1, "localhost", 9000},
	{"0.0.0.0:1", 1, "0.0.0.0", 1},
	{"[fe80::1%eth0]:65535", 1, "fe80::1%eth0", 65535},
	{"my-host.example:443", 1, "my-host.example", 443},
	{"localhost:0", 0, NULL, 0},
	{"localhost:65536", 0, NULL, 0},
	{"localhost:", 0, NULL, 0},
	{"localhost", 0, NULL, 0},
	{":8080", 0, NULL, 0},
	{"::1:8080", 0, NULL, 0},
	{"[::1]8080", 0, NULL, 0},
	{"[::1:8080", 0, NULL, 0},
	{"[]:80", 0, NULL, 0},
	{"[abc]:80", 0, NULL, 0},
	{"host:80x", 0, NULL, 0},
	{"host:-80", 0, NULL, 0},
	{"host:+80", 0, NULL, 0},
	{"host:000080", 0, NULL, 0},
	{"bad host:80", 0, NULL, 0},
	{"", 0, NULL, 0},
};

static void
test_parse_listen(void **state)
{
	char host[64];
	int port;

	(void)state;
	for (size_t i = 0; i < sizeof(listen_cases) / sizeof(listen_cases[0]);
	     i++) {
		const struct listen_case *c = &listen_cases[i];
		int rc = config_parse_listen(c->in, host, sizeof(host), &port);

		if (c->ok) {
			if (rc != STATUS_OK)
				fail_msg("%s: rejected", c->in);
			assert_string_equal(host, c->host);
			assert_int_equal(port, c->port);
		} else {
			if (rc != STATUS_INVALID)
				fail_msg("%s: accepted", c->in);
			assert_string_equal(host, "");
			assert_int_equal(port, 0);
		}
	}
	/* host buffer too small */
	assert_int_equal(config_parse_listen("localhost:80", host, 9, &port),
			 STATUS_INVALID);
	assert_int_equal(config_parse_listen("localhost:80", host, 10, &port),
			 STATUS_OK);
}

static void
test_reload(void **state)
{
	struct config *a = load_ok(NULL, no_env), *b;
	char keys[256];

	(void)state;
	assert_true(config_key_reloadable("log.level"));
	assert_true(config_key_reloadable("tools.enabled_sets"));
	assert_true(config_key_reloadable("tools.disabled"));
	assert_true(config_key_reloadable("auth.keys"));
	assert_false(config_key_reloadable("server.listen"));
	assert_false(config_key_reloadable("database.url"));
	assert_false(config_key_reloadable("conformance.enabled"));
	assert_false(config_key_reloadable("no.such"));
	assert_false(config_key_reloadable(NULL));

	/* only reloadable keys changed */
	b = load_ok("[log]\nlevel = 'error'\n[tools]\ndisabled = ['x']\n"
		    "[auth]\nkeys = ['" HASH_A "']\n",
		    no_env);
	assert_int_equal(config_diff_nonreloadable(a, b, keys, sizeof(keys)),
			 0);
	assert_string_equal(keys, "");
	config_free(b);

	b = load_ok("[server]\nlisten = '127.0.0.1:9'\nallowed_hosts = ['h']\n"
		    "[workers]\nthreads = 2\n[log]\nlevel = 'error'\n",
		    no_env);
	assert_int_equal(config_diff_nonreloadable(a, b, keys, sizeof(keys)),
			 3);
	assert_string_equal(keys, "server.listen, server.allowed_hosts, "
				  "workers.threads");
	/* truncation is safe and the count still right */
	assert_int_equal(config_diff_nonreloadable(a, b, keys, 10), 3);
	assert_string_equal(keys, "server.li");
	assert_int_equal(config_diff_nonreloadable(a, b, NULL, 0), 3);
	config_free(a);
	config_free(b);
}

static void
test_small_helpers(void **state)
{
	struct config_error err = {0};
	char buf[256];

	(void)state;
	assert_int_equal(config_log_level_parse("debug"), CONFIG_LOG_DEBUG);
	assert_int_equal(config_log_level_parse("error"), CONFIG_LOG_ERROR);
	assert_int_equal(config_log_level_parse("INFO"), -1);
	assert_int_equal(config_log_level_parse(NULL), -1);
	assert_string_equal(config_log_level_name(CONFIG_LOG_WARN), "warn");
	assert_string_equal(config_log_level_name((enum config_log_level)9),
			    "unknown");

	snprintf(err.file, sizeof(err.file), "a.toml");
	err.line = 3;
	err.column = 7;
	snprintf(err.key, sizeof(err.key), "server.threads");
	snprintf(err.msg, sizeof(err.msg), "bad");
	config_error_format(&err, buf, sizeof(buf));
	assert_string_equal(buf, "a.toml:3:7: server.threads: bad");
	err.line = 0;
	config_error_format(&err, buf, sizeof(buf));
	assert_string_equal(buf, "a.toml: server.threads: bad");
	err.file[0] = '\0';
	config_error_format(&err, buf, sizeof(buf));
	assert_string_equal(buf, "server.threads: bad");
	err.key[0] = '\0';
	config_error_format(&err, buf, sizeof(buf));
	assert_string_equal(buf, "bad");
	config_error_format(&err, buf, 2);
	assert_string_equal(buf, "b");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_full_file),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_env),
		cmocka_unit_test(test_env_errors),
		cmocka_unit_test(test_print_masks_secrets),
		cmocka_unit_test(test_print_round_trip),
		cmocka_unit_test(test_example_file),
		cmocka_unit_test(test_conformance_file),
		cmocka_unit_test(test_load_file_errors),
		cmocka_unit_test(test_parse_listen),
		cmocka_unit_test(test_reload),
		cmocka_unit_test(test_small_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
