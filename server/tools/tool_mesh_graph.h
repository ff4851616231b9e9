/* tool_mesh_graph.h - handler of get_mesh_graph in the "mesh" tool set:
 * the service graph of a time range from spans, with per-edge rates,
 * errors, P50/P95 and health, and Kiali's MeshHealthSummary
 * (lib/telemetry/meshquery). */
#ifndef SEXTANT_TOOL_MESH_GRAPH_H
#define SEXTANT_TOOL_MESH_GRAPH_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler mesh_graph_tool_handlers[];

#endif
