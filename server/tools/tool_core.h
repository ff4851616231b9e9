/* tool_core.h - handlers of the "core" tool set (the gateway itself). */
#ifndef SEXTANT_TOOL_CORE_H
#define SEXTANT_TOOL_CORE_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler core_tool_handlers[];

#endif
