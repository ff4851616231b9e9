/*
 * gateway.c - the gateway's own state as MCP shows it: sessions, tools,
 * worker load and configured sources, for get_server_status (through
 * call_gateway_status) and the sextant://server/status resource.
 */
#include "mcp/gateway.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/clock.h"
#include "base/pool.h"
#include "core/instances.h"
#include "core/server.h"
#include "mcp/call.h"
#include "mcp/catalog.h"
#include "mcp/prompts.h"
#include "mcp/session.h"
#include "mcp/tools.h"
#include "prom/grafana.h"

/* The gateway's state as structured content (new reference), and its
 * text rendering in text (may be NULL). */
json_t *
gateway_status(struct server *srv, bool with_uptime, char *text, size_t len)
{
	const struct config *cfg = srv->cfg;
	long long uptime = (clock_mono_ms() - srv->started_ms) / 1000;
	int sessions = session_table_count(srv->sessions);
	int busy = pool_busy(srv->pool), queued = pool_queue_depth(srv->pool);
	const char *store =
		cfg->database.url[0] != '\0' ? "configured" : "not configured";
	char prom[256] = "not configured";
	size_t ntools, plen = 0;
	json_t *sc;

	/* the instances' names, as many as fit */
	for (size_t i = 0; i < instances_count(srv->instances); i++)
		if (plen < sizeof(prom))
			plen += (size_t)snprintf(
				prom + plen, sizeof(prom) - plen, "%s%s",
				i == 0 ? "configured: " : ", ",
				grafana_name(instances_at(srv->instances, i)));

	server_live_rdlock(srv);
	ntools = tools_count(srv->tools);
	server_live_unlock(srv);
	if (text != NULL)
		snprintf(text, len,
			 "Sextant %s, up %lld s\n"
			 "Sessions: %d\n"
			 "Tools: %zu\n"
			 "Workers: %d threads, %d busy, %d queued\n"
			 "Telemetry store: %s\n"
			 "Prometheus: %s",
			 SEXTANT_VERSION, uptime, sessions, ntools,
			 cfg->workers.threads, busy, queued, store, prom);
	sc = json_pack("{s:s, s:i, s:I, s:{s:i, s:i, s:i}, s:{s:s, s:s}}",
		       "version", SEXTANT_VERSION, "sessions", sessions,
		       "tools", (json_int_t)ntools, "workers", "threads",
		       cfg->workers.threads, "busy", busy, "queued", queued,
		       "sources", "telemetry_store", store, "prometheus", prom);
	if (sc != NULL && with_uptime &&
	    json_object_set_new(sc, "uptime_s", json_integer(uptime)) != 0) {
		json_decref(sc);
		return NULL;
	}
	return sc;
}

/* sextant://server/status: the same state without the uptime, so that
 * it changes only when something happens (subscribers are told). */
static int
read_status(const char *uri, void *arg, json_t **contents)
{
	json_t *sc = gateway_status(arg, false, NULL, 0);
	char *text = sc != NULL ? json_dumps(sc, JSON_COMPACT | JSON_SORT_KEYS)
				: NULL;

	json_decref(sc);
	if (text == NULL)
		return STATUS_NOMEM;
	*contents = json_pack("[{s:s, s:s, s:s}]", "uri", uri, "mimeType",
			      "application/json", "text", text);
	free(text);
	return *contents != NULL ? STATUS_OK : STATUS_NOMEM;
}

static const struct resource_def status_resource = {
	.uri = GATEWAY_STATUS_URI,
	.name = "server-status",
	.title = "Sextant server status",
	.description = "Sessions, tools, worker load and configured telemetry "
		       "sources of this gateway, as JSON; subscribe to be told "
		       "when it changes",
	.mime_type = "application/json",
	.read = read_status,
};

/* sextant://docs/definitions: the definitions the short tool descriptions
 * name (error rate, percentiles, rollups, sources, GenAI tokens and cost),
 * kept once as a file of the investigate skill and served under this
 * name too. */
static int
read_definitions(const char *uri, void *arg, json_t **contents)
{
	struct server *srv = arg;
	json_t *c = NULL;
	int rc;

	*contents = NULL;
	rc = catalog_read(srv->catalog, DEFINITIONS_SKILL_URI, &c);
	if (rc != STATUS_OK)
		return rc;
	if (json_object_set_new(json_array_get(c, 0), "uri",
				json_string(uri)) != 0) {
		json_decref(c);
		return STATUS_NOMEM;
	}
	*contents = c;
	return STATUS_OK;
}

static const struct resource_def definitions_resource = {
	.uri = GATEWAY_DEFINITIONS_URI,
	.name = "definitions",
	.title = "Sextant definitions",
	.description = "What the numbers mean: sources, error rate, "
		       "percentiles, rollups, traces, GenAI tokens and cost",
	.mime_type = "text/markdown",
	.read = read_definitions,
};

int
gateway_register_catalog(struct server *srv)
{
	int rc = catalog_add_resource(srv->catalog, &status_resource, srv);

	if (rc == STATUS_OK)
		rc = catalog_add_resource(srv->catalog, &definitions_resource,
					  srv);
	return rc == STATUS_OK ? prompts_register_catalog(srv) : rc;
}

/* tool.h's view of it, for get_server_status. */
json_t *
call_gateway_status(struct call *call, char *text, size_t len)
{
	return gateway_status(call_server(call), true, text, len);
}
