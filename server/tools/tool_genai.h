/* tool_genai.h - handlers of the "genai" tool set: get_session (one
 * session's traces, errors, services, bottleneck and LLM calls),
 * analyze_genai (usage and cost by model, service and session against the
 * previous period) and compare_sessions (two sessions side by side). */
#ifndef SEXTANT_TOOL_GENAI_H
#define SEXTANT_TOOL_GENAI_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler genai_tool_handlers[];

#endif
