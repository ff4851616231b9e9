/*
 * fuzz_jsonrpc.c - libFuzzer harness for the MCP dispatcher: arbitrary
 * bytes parsed as JSON and dispatched (each element of an array, as a
 * batch) on one session of a real server with the conformance fixtures,
 * through an exchange that frees whatever it is sent.
 *
 * Tool calls run on the worker pool; to keep each input self-contained
 * the harness waits for them (cancelling the slow ones) until they have
 * let go of the session, so nothing outlives the input.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/log.h"
#include "base/clock.h"
#include "conf/config.h"
#include "boot/boot.h"
#include "core/server.h"
#include "mcp/call.h"
#include "mcp/dispatch.h"
#include "mcp/exchange.h"
#include "mcp/session.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct server srv;
static struct session *sess;

static void
sink_send(struct exchange *ex, json_t *msg, bool final)
{
	(void)ex;
	(void) final;
	json_decref(msg);
}

static void
sink_send_text(struct exchange *ex, char *text, size_t len)
{
	(void)ex;
	(void)len;
	free(text);
}

static int
sink_drop(struct exchange *ex)
{
	(void)ex;
	return STATUS_UNSUPPORTED;
}

static void
sink_free(struct exchange *ex)
{
	(void)ex; /* static: nothing to free */
}

static const struct exchange_ops sink_ops = {
	.send = sink_send,
	.send_text = sink_send_text,
	.drop = sink_drop,
	.free = sink_free,
};

/* One reference for the harness, never dropped: sink_free never runs. */
static struct exchange sink = {.ops = &sink_ops, .refs = 1};

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct config *cfg = NULL;
	json_t *init, *resp = NULL;
	char err[512];
	FILE *devnull;

	(void)argc;
	(void)argv;
	json_object_seed(1); /* the same hash order on every run */
	devnull = fopen("/dev/null", "w");
	if (devnull != NULL)
		log_set_output(devnull);
	if (config_defaults(&cfg) != STATUS_OK)
		abort();
	cfg->conformance.enabled = true;
	cfg->log.level = CONFIG_LOG_ERROR;
	cfg->workers.threads = 2;
	if (boot_init(&srv, cfg, NULL, err, sizeof(err)) != STATUS_OK) {
		fprintf(stderr, "server_init: %s\n", err);
		abort();
	}
	/* Sampling and elicitation declared, so those fixtures reach the
	 * server-to-client request path. */
	init = json_loads("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":"
			  "\"initialize\",\"params\":{\"protocolVersion\":"
			  "\"2025-11-25\",\"capabilities\":{\"sampling\":{},"
			  "\"elicitation\":{},\"roots\":{}},\"clientInfo\":{"
			  "\"name\":\"fuzz\",\"version\":\"1\"}}}",
			  0, NULL);
	if (init == NULL ||
	    dispatch_initialize(&srv, init, &resp, &sess) != STATUS_OK)
		abort();
	json_decref(init);
	json_decref(resp);
	return 0;
}

static bool
is_initialize(const json_t *msg)
{
	const char *m = json_string_value(json_object_get(msg, "method"));

	return m != NULL && strcmp(m, "initialize") == 0;
}

/* initialize makes a session of its own: made and ended at once. */
static void
fuzz_initialize(const json_t *msg)
{
	struct session *s = NULL;
	json_t *resp = NULL;
	char id[SESSION_ID_LEN + 1];

	(void)dispatch_initialize(&srv, msg, &resp, &s);
	json_decref(resp);
	if (s != NULL) {
		memcpy(id, s->id, sizeof(id));
		session_release(s);
		(void)session_delete(srv.sessions, id);
	}
}

static void
fuzz_one(const json_t *msg)
{
	if (is_initialize(msg)) {
		fuzz_initialize(msg);
		return;
	}
	/* STATUS_FULL (queue full) sends nothing: nothing to do here. */
	(void)dispatch_message(&srv, sess, &sink, msg);
}

/*
 * Lets the session's calls finish on their own for up to SETTLE_MS (quick
 * fixtures complete, so their handlers are fuzzed too), then cancels what
 * is left (long sleeps, requests waiting for a client that never answers)
 * and waits until every call has released the session: the harness's own
 * hold keeps busy at 1.
 */
#define SETTLE_MS 300

static void
settle(void)
{
	struct timespec ts = {0, 200000};
	int64_t deadline = clock_mono_ms() + SETTLE_MS;
	int busy;

	for (;;) {
		pthread_mutex_lock(&sess->mu);
		busy = sess->busy;
		pthread_mutex_unlock(&sess->mu);
		if (busy <= 1)
			break;
		if (clock_mono_ms() > deadline)
			call_expire_session(sess, 0, clock_mono_ms() + 1000);
		nanosleep(&ts, NULL);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *root;
	size_t i;

	root = json_loadb((const char *)data, size,
			  JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	if (root == NULL)
		return 0;
	if (json_is_array(root)) {
		/* A batch, bounded as the transport bounds it. */
		for (i = 0; i < json_array_size(root) && i < 1000; i++)
			fuzz_one(json_array_get(root, i));
	} else {
		fuzz_one(root);
	}
	json_decref(root);
	settle();
	return 0;
}
