/* tool_telemetry.h - handlers of the OTLP plumbing tools in the "query"
 * set: query_telemetry_metrics (metric points) and query_telemetry_spans. */
#ifndef SEXTANT_TOOL_TELEMETRY_H
#define SEXTANT_TOOL_TELEMETRY_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler telemetry_tool_handlers[];

#endif
