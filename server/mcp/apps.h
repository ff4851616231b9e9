/*
 * apps.h - the MCP Apps extension (SEP-1865, io.modelcontextprotocol/ui):
 * the ui://sextant/{trace,graph,session} resources, each one HTML document
 * made from server/ui/ at build time (scripts/gen-apps.sh) and embedded
 * (scripts/gen-embed.sh).  Tools name them in their definitions'
 * _meta.ui.resourceUri (shown to clients that declare the extension).
 */
#ifndef SEXTANT_APPS_H
#define SEXTANT_APPS_H

#include "base/status.h"

#define APPS_EXTENSION "io.modelcontextprotocol/ui"
#define APPS_MIME_TYPE "text/html;profile=mcp-app"

#include <jansson.h>

struct catalog;

/* The extension's entry in the server's capabilities.extensions (new
 * reference): the MIME types of the apps served. */
json_t *apps_capability(void);

/* Adds the ui:// resources to cat (start-up only).  STATUS_INVALID if an
 * app's embedded document is missing (a build fault). */
int apps_register_catalog(struct catalog *cat) WUR;

#endif
