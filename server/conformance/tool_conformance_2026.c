/*
 * tool_conformance_2026.c - handlers of the conformance fixture tools for
 * revision 2026-07-28: test_custom_header, whose x-mcp-header parameters
 * the transport checks against the Mcp-Param-* headers (SEP-2243) before
 * the call gets here, and test_trigger_tool_change, which announces a tool
 * list change to every session and subscriptions/listen stream.
 */
#include "conformance/tool_conformance_2026.h"

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "base/status.h"
#include "mcp/call.h"
#include "mcp/dispatch.h"

/* Echoes the validated arguments, keys sorted, so a test sees exactly
 * what reached the tool after the header checks. */
static int
conf26_custom_header(struct call *call, const json_t *args, json_t **result)
{
	char *echo, *text = NULL;
	int n;

	(void)call;
	*result = NULL;
	echo = json_dumps(args, JSON_COMPACT | JSON_SORT_KEYS);
	if (echo == NULL)
		return STATUS_NOMEM;
	n = snprintf(NULL, 0, "test_custom_header called with: %s", echo);
	if (n > 0 && (text = malloc((size_t)n + 1)) != NULL) {
		snprintf(text, (size_t)n + 1,
			 "test_custom_header called with: %s", echo);
		*result = tool_result_text(text);
	}
	free(text);
	free(echo);
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

static int
conf26_trigger_tool_change(struct call *call, const json_t *args,
			   json_t **result)
{
	(void)args;
	dispatch_notify_tools_changed(call_server(call));
	*result = tool_result_text("tools/list_changed sent");
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

const struct tool_handler conformance_2026_tool_handlers[] = {
	{"test_custom_header", conf26_custom_header},
	{"test_trigger_tool_change", conf26_trigger_tool_change},
	{NULL, NULL},
};
