/* tool_spans_span.h - one span whole (get_trace with a span_id): its fields,
 * attributes, resource, events and links, redacted. */
#ifndef SEXTANT_TOOL_SPANS_SPAN_H
#define SEXTANT_TOOL_SPANS_SPAN_H

#include <jansson.h>

#include "tools/tool.h"

/* get_trace's answer for span span_id (16 hex digits, checked here) of
 * trace trace_id (32 hex digits or the first 8 or more): a tool_fn's
 * contract. */
int tool_get_span(struct call *call, const char *trace_id, const char *span_id,
		  json_t **result) WUR;

#endif
