/* tool_spans.h - handlers of the "spans" tool set: query_spans (a paged
 * span table over both sources) and get_trace (one trace as a folded tree
 * with its bottlenecks and error chain). */
#ifndef SEXTANT_TOOL_SPANS_H
#define SEXTANT_TOOL_SPANS_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler spans_tool_handlers[];

#endif
