/*
 * tools.h - the tool registry: definitions (data) bound to handlers (C).
 *
 * Every definition embedded from server/tools/<set>/<name>.json is parsed
 * and checked at start-up: the MCP Tool shape, a compilable inputSchema
 * (and outputSchema), a name that matches its file and a handler of that
 * name in one of the handler tables.  A handler without a definition is an
 * error too.  Enablement (config [tools] and [conformance]) then selects
 * the tools that are listed and callable.  A registry is immutable once
 * built and reference counted: a SIGHUP builds a new one and calls in
 * flight keep the old one alive.
 */
#ifndef SEXTANT_TOOLS_H
#define SEXTANT_TOOLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "config.h"
#include "status.h"
#include "tool.h"

struct jsonschema;

struct tool_def {
	const char *name; /* borrowed from def */
	char set[64];
	json_t *def;		   /* the MCP Tool object as listed */
	struct jsonschema *input;  /* compiled inputSchema */
	struct jsonschema *output; /* compiled outputSchema or NULL */
	tool_fn fn;
	/* callable though not listed: a deprecated alias, unless disabled */
	bool unlisted_callable;
};

struct tools;

/*
 * Builds the registry from the embedded definitions and the NULL-
 * terminated list of handler tables, enabled per cfg.  On error returns
 * STATUS_INVALID with err naming the file and the problem.
 */
int tools_load(const struct tool_handler *const *tables,
	       const struct config *cfg, struct tools **out, char *err,
	       size_t errlen) WUR;
void tools_ref(struct tools *t);
void tools_unref(struct tools *t); /* accepts NULL */

/* Enabled tools, and the unlisted deprecated aliases ("deprecated" set,
 * unless disabled by name or the "query" set is off).  NULL when unknown
 * or disabled. */
const struct tool_def *tools_find(const struct tools *t, const char *name);
size_t tools_count(const struct tools *t);
const struct tool_def *tools_at(const struct tools *t, size_t i);
/* Same enabled names in the same order (reload: did the set change?). */
bool tools_same(const struct tools *a, const struct tools *b);

/*
 * The result of tools/list for a revision and page, serialized once and
 * cached: {"tools":[...],"nextCursor":...} (2026-07-28: with resultType,
 * ttlMs, cacheScope), server.list_page_size tools
 * a page.  start is the offset decoded from the cursor.  Borrowed; valid while t lives.  NULL past the end.
 */
const char *tools_list_json(const struct tools *t, const char *version,
			    size_t start, size_t *len);

#endif
