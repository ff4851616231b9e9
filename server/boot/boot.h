/*
 * boot.h - assembling the gateway: the shared context built from the
 * config, reloaded on SIGHUP, ticked once a second, torn down.
 */
#ifndef SEXTANT_BOOT_H
#define SEXTANT_BOOT_H

#include <stddef.h>

#include "base/status.h"

struct config;
struct server;
struct tool_handler;

/* Every tool family's handler table, NULL-terminated: what the gateway
 * binds the definitions to, and what the tests load (one list). */
extern const struct tool_handler *const boot_tool_families[];

/*
 * Builds everything but the HTTP daemon from cfg (taken: freed by
 * boot_free).  On error returns a status with a message in err; the
 * caller still calls boot_free.
 */
int boot_init(struct server *srv, struct config *cfg, const char *config_path,
	      char *err, size_t errlen) WUR;
void boot_free(struct server *srv);

/* SIGHUP: re-reads the config file; applies log.level, tools.* and
 * auth.keys; keeps the old settings (and logs why) when it is invalid. */
void boot_reload(struct server *srv);

/* Once a second from the main thread: session expiry, keep-alives,
 * call deadlines, the status resource's subscribers, store upkeep. */
void boot_tick(struct server *srv);

/*
 * The MCP revisions served on /mcp, oldest first, separated by single
 * spaces: those initialize negotiates (dispatch_versions) and the stateless
 * ones (reqmeta_versions).  `sextant --version` prints them, and make run's
 * banner takes them from there.  Cut short at a revision boundary when
 * buflen is too small; buf is always terminated.
 */
void boot_revisions(char *buf, size_t buflen);

#endif
