/* tool_query.h - handlers of the "query" tool set (unified span tools,
 * their eBPF plumbing) and of the "deprecated" set (query_beyla_*). */
#ifndef SEXTANT_TOOL_QUERY_H
#define SEXTANT_TOOL_QUERY_H

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler query_tool_handlers[];

/*
 * query_metrics' status_code_range: "2xx" .. "5xx" (any case) or people's
 * words for a class ("errors" and "server errors" 5xx, "client errors"
 * 4xx, "success" 2xx, "redirects" 3xx) into [*min, *max] (500, 599).
 * STATUS_INVALID with err (len bytes) listing the accepted forms.
 */
int query_status_range(const char *range, int *min, int *max, char *err,
		       size_t len) WUR;

#endif
