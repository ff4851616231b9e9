/* tool_grafana.h - the "grafana" tool set (query_grafana_metrics) and the
 * metrics instances it asks: one lib/prom/grafana client per [grafana.<name>] /
 * [prometheus.<name>] table, built at start-up with its /metrics gauges. */
#ifndef SEXTANT_TOOL_GRAFANA_H
#define SEXTANT_TOOL_GRAFANA_H

#include "base/status.h"
#include "tools/tool.h"

struct server;
struct grafana;

/* {NULL, NULL}-terminated. */
extern const struct tool_handler grafana_tool_handlers[];

/*
 * Builds a client per configured instance into srv->grafana and registers
 * the sextant_grafana_* metric families (circuit state, in-flight and
 * waiting queries, requests, retries, cache hits and misses, labelled by
 * instance).  Nothing is sent upstream yet.  STATUS_INVALID / STATUS_NOMEM
 * with err naming the instance.  Called once from server_init.
 */
int tool_grafana_init(struct server *srv, char *err, size_t errlen) WUR;

/* Frees srv->grafana.  No call may be running (after pool_free). */
void tool_grafana_free(struct server *srv);

/*
 * The instance called name, or the default (the first configured) when
 * name is NULL or "".  NULL when none is configured or no such name.
 * Borrowed: valid until tool_grafana_free; thread-safe.
 */
struct grafana *tool_grafana_instance(struct server *srv, const char *name);

/*
 * The instance whose services key names service (an exact "name" or
 * "name=<label value>", or "*"; the first instance in file order that
 * does), with where its series are filled into *spec.  NULL when none
 * does.  Borrowed like tool_grafana_instance; spec's strings too.
 */
struct promcalls_spec;
struct grafana *tool_grafana_for_service(struct server *srv,
					 const char *service,
					 struct promcalls_spec *spec);

#endif
