/*
 * tool_core.c - the "core" tool family: tools about the gateway itself,
 * available without any telemetry source.  The state itself is the MCP
 * layer's (server/mcp/gateway.c): this file only answers with it.
 */
#include "tools/tool_core.h"

#include <stdbool.h>

#include "tools/tool.h"

static int
get_server_status(struct call *call, const json_t *args, json_t **result)
{
	char text[1024];
	json_t *sc;

	(void)args;
	sc = call_gateway_status(call, text, sizeof(text));
	if (sc == NULL)
		return STATUS_NOMEM;
	*result = tool_result_new(
		json_pack("[{s:s, s:s}]", "type", "text", "text", text), sc,
		false);
	return *result != NULL ? STATUS_OK : STATUS_NOMEM;
}

const struct tool_handler core_tool_handlers[] = {
	{"get_server_status", get_server_status},
	{NULL, NULL},
};
