/*
 * gateway.h - the gateway's own state: the get_server_status answer and
 * the sextant://server/status resource.
 */
#ifndef SEXTANT_GATEWAY_H
#define SEXTANT_GATEWAY_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

struct server;

#define GATEWAY_STATUS_URI "sextant://server/status"
/* The definitions tool descriptions name, and the skill file it serves. */
#define GATEWAY_DEFINITIONS_URI "sextant://docs/definitions"
#define DEFINITIONS_SKILL_URI	"skill://sextant/investigate/definitions.md"

/* The gateway's state as structured content (new reference; NULL: out of
 * memory), with the uptime when with_uptime, and its text rendering in
 * text (may be NULL).  Thread-safe. */
json_t *gateway_status(struct server *srv, bool with_uptime, char *text,
		       size_t len);

/* Registers the status resource (start-up only; srv outlives it). */
int gateway_register_catalog(struct server *srv) WUR;

#endif
