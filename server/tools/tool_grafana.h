/* tool_grafana.h - the "grafana" tool set (query_grafana_metrics): one
 * metric from a metrics instance (server/core/instances). */
#ifndef SEXTANT_TOOL_GRAFANA_H
#define SEXTANT_TOOL_GRAFANA_H

#include "base/status.h"
#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler grafana_tool_handlers[];

#endif
