/* tool_spans_services.h - handler of list_services in the "spans" tool set:
 * every service with spans in a time range, its namespace, sources,
 * request rate, error rate, p95 and last span (lib/telemetry/servicequery). */
#ifndef SEXTANT_TOOL_SPANS_SERVICES_H
#define SEXTANT_TOOL_SPANS_SERVICES_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler spans_services_tool_handlers[];

#endif
