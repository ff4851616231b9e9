/*
 * tool_core.c - the "core" tool family: tools about the gateway itself,
 * available without any telemetry source.
 */
#include <stdio.h>

#include "call.h"
#include "pool.h"
#include "server.h"
#include "session.h"
#include "tool_core.h"
#include "tools.h"

static int
get_server_status(struct call *call, const json_t *args, json_t **result)
{
	struct server *srv = call_server(call);
	const struct config *cfg = srv->cfg;
	long long uptime = (session_now_ms() - srv->started_ms) / 1000;
	int sessions = session_table_count(srv->sessions);
	int busy = pool_busy(srv->pool), queued = pool_queue_depth(srv->pool);
	const char *store = cfg->database.url[0] != '\0' ? "configured"
							 : "not configured";
	size_t ntools;
	json_t *sc;
	char text[1024];

	(void)args;
	server_live_rdlock(srv);
	ntools = tools_count(srv->tools);
	server_live_unlock(srv);
	snprintf(text, sizeof(text),
		 "Sextant %s, up %lld s\n"
		 "Sessions: %d\n"
		 "Tools: %zu\n"
		 "Workers: %d threads, %d busy, %d queued\n"
		 "Telemetry store: %s\n"
		 "Prometheus: not configured",
		 SEXTANT_VERSION, uptime, sessions, ntools,
		 cfg->workers.threads, busy, queued, store);
	sc = json_pack("{s:s, s:I, s:i, s:I, s:{s:i, s:i, s:i}, s:{s:s, s:s}}",
		       "version", SEXTANT_VERSION, "uptime_s",
		       (json_int_t)uptime, "sessions", sessions, "tools",
		       (json_int_t)ntools, "workers", "threads",
		       cfg->workers.threads, "busy", busy, "queued", queued,
		       "sources", "telemetry_store", store, "prometheus",
		       "not configured");
	if (sc == NULL)
		return STATUS_NOMEM;
	*result = tool_result_new(json_pack("[{s:s, s:s}]", "type", "text",
					    "text", text),
				  sc, false);
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

const struct tool_handler core_tool_handlers[] = {
	{"get_server_status", get_server_status},
	{NULL, NULL},
};
