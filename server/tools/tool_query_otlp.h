/* tool_query_otlp.h - handlers of the OTLP plumbing tools in the "query"
 * set: query_telemetry_metrics (metric points) and query_telemetry_spans. */
#ifndef SEXTANT_TOOL_QUERY_OTLP_H
#define SEXTANT_TOOL_QUERY_OTLP_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler query_otlp_tool_handlers[];

#endif
