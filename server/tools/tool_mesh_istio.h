/* tool_mesh_istio.h - the "mesh" set's manage_istio_config: Istio and
 * Gateway API objects through the Kubernetes API (lib/kube). */
#ifndef SEXTANT_TOOL_MESH_ISTIO_H
#define SEXTANT_TOOL_MESH_ISTIO_H

#include "base/status.h"
#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler mesh_istio_tool_handlers[];

#endif
