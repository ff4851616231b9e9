/* tool_core.h - handlers of the "core" tool set (the gateway itself). */
#ifndef SEXTANT_TOOL_CORE_H
#define SEXTANT_TOOL_CORE_H

#include "tools/tool.h"

struct server;

/* {NULL, NULL}-terminated. */
extern const struct tool_handler core_tool_handlers[];

#define CORE_STATUS_URI "sextant://server/status"

/* Registers the core resources (start-up only; srv outlives them). */
int core_register_catalog(struct server *srv) WUR;

#endif
