/*
 * conformance.h - the fixtures the official MCP conformance suite expects
 * (@modelcontextprotocol/conformance 0.1.16), offered only when
 * [conformance] enabled = true.  The tool definitions are data in
 * server/conformance/; this header binds them to handlers and
 * registers the fixture resources, template and prompts.
 */
#ifndef SEXTANT_CONFORMANCE_H
#define SEXTANT_CONFORMANCE_H

#include "base/status.h"
#include "tools/tool.h"

/*
 * {NULL, NULL}-terminated table binding conformance tool names to handlers.
 * The handlers are thread-safe (no shared mutable state) and block only in
 * call_sleep_ms / call_request, so they must run on a worker thread.
 */
extern const struct tool_handler conformance_tool_handlers[];

/*
 * Registers the fixture resources (test://static-text, test://static-binary,
 * test://watched-resource), the template test://template/{id}/data and the
 * four test_* prompts in the catalog.  Start-up only, before the server
 * accepts connections.  Returns STATUS_OK or the first catalog_add_*
 * failure; entries added before a failure stay registered (the caller
 * aborts start-up).
 */
struct catalog;
int conformance_register_catalog(struct catalog *cat) WUR;

/*
 * Base64 of the 1x1 PNG the fixtures return (image tool, binary resource,
 * image prompt), copied from the reference everything-server.
 */
extern const char conformance_png_1x1[];

#endif
