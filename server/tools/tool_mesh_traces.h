/* tool_mesh_traces.h - handler of get_traces in the "mesh" tool set: one
 * trace, or a service's recent traces, summarised as Kiali's get_traces
 * does (bottlenecks, error spans, error chain) from the merged eBPF and
 * OTLP trees (lib/telemetry/tracesummary). */
#ifndef SEXTANT_TOOL_MESH_TRACES_H
#define SEXTANT_TOOL_MESH_TRACES_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler mesh_traces_tool_handlers[];

#endif
