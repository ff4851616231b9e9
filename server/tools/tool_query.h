/* tool_query.h - handlers of the "query" tool set (unified span tools,
 * their eBPF plumbing) and of the "deprecated" set (query_beyla_*). */
#ifndef SEXTANT_TOOL_QUERY_H
#define SEXTANT_TOOL_QUERY_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler query_tool_handlers[];

#endif
