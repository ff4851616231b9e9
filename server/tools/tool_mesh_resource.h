/* tool_mesh_resource.h - handler of get_resource_detail in the "mesh" tool
 * set: the services or workloads of a time range from spans, or one with
 * its versions, pods, hosts, edges, top routes and last error
 * (lib/telemetry/resourcequery). */
#ifndef SEXTANT_TOOL_MESH_RESOURCE_H
#define SEXTANT_TOOL_MESH_RESOURCE_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler mesh_resource_tool_handlers[];

#endif
