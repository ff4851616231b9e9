/*
 * transport.h - MCP Streamable HTTP on /mcp (revisions 2025-03-26,
 * 2025-06-18, 2025-11-25): POST carries client messages, GET opens or
 * resumes an SSE stream, DELETE ends a session.
 */
#ifndef SEXTANT_TRANSPORT_H
#define SEXTANT_TRANSPORT_H

#include <microhttpd.h>

struct req;

/*
 * Handles /mcp once the body is complete, and again each time a suspended
 * connection is resumed.  Header checks common to all routes (Host,
 * Origin, auth) are done before.
 */
enum MHD_Result transport_mcp(struct req *r);

#endif
