/*
 * tool_conformance_2026.h - handlers of the conformance fixtures added for
 * revision 2026-07-28 (@modelcontextprotocol/conformance 0.2.0-alpha.12),
 * offered only when [conformance] enabled = true, like those of
 * conformance.h.  Definitions are data in server/conformance/.
 */
#ifndef SEXTANT_TOOL_CONFORMANCE_2026_H
#define SEXTANT_TOOL_CONFORMANCE_2026_H

#include "tools/tool.h"

/*
 * {NULL, NULL}-terminated table binding fixture tool names to handlers.
 * The handlers are thread-safe (no shared mutable state) and run on a
 * worker thread.
 */
extern const struct tool_handler conformance_2026_tool_handlers[];

#endif
