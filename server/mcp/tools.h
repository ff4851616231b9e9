/*
 * tools.h - the tool registry: definitions (data) bound to handlers (C).
 *
 * Every definition embedded from server/tools/<set>/<name>.json is parsed
 * and checked at start-up: the MCP Tool shape, a compilable inputSchema
 * (and outputSchema), valid x-mcp-header annotations (indexed for the
 * transport), a name that matches its file and a handler of that name in
 * one of the handler tables.  A handler without a definition is an
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

#include "base/status.h"
#include "conf/config.h"
#include "tools/tool.h"

struct jsonschema;

/*
 * A tool parameter mirrored into an HTTP header (SEP-2243, 2026-07-28
 * basic/transports/streamable-http "Custom Headers from Tool
 * Parameters"): a property of inputSchema annotated "x-mcp-header":
 * "<Name>", which a client sends as the header Mcp-Param-<Name> whenever
 * the argument has a value.
 */
enum tool_header_type {
	TOOL_HEADER_STRING,
	TOOL_HEADER_INTEGER,
	TOOL_HEADER_BOOLEAN,
};

struct tool_header {
	char *header;	   /* "Mcp-Param-<Name>" */
	char *arg;	   /* the property's path for messages: "a.b" */
	const char **path; /* property names from the root, borrowed from
			      the schema; depth >= 1 of them */
	size_t depth;
	enum tool_header_type type;
};

struct tool_def {
	const char *name; /* borrowed from def */
	char set[64];
	json_t *def;		   /* the MCP Tool object as listed */
	struct jsonschema *input;  /* compiled inputSchema */
	struct jsonschema *output; /* compiled outputSchema or NULL */
	tool_fn fn;
	/* callable though not listed: a deprecated alias, unless disabled */
	bool unlisted_callable;
	/* named (or its set) in [auth.oauth] write_tools: a caller needs
	 * scope_write to see and call it */
	bool write;
	/* inputSchema's x-mcp-header properties, in schema order */
	struct tool_header *headers;
	size_t nheaders;
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
/* As tools_list_json; with ui, the tools keep their _meta.ui (the MCP Apps
 * extension's resourceUri), for a client that declared the extension. */
const char *tools_list_json_ui(const struct tools *t, const char *version,
			       bool ui, size_t start, size_t *len);
/* As tools_list_json_ui; with read_only, without the write tools (a
 * caller lacking scope_write), paged on their own. */
const char *tools_list_json_for(const struct tools *t, const char *version,
				bool ui, bool read_only, size_t start,
				size_t *len);

/*
 * Indexes the x-mcp-header annotations of a compiled inputSchema (schema
 * borrowed; the index borrows its property names, so it must not outlive
 * schema).  Each annotation must be on a property reached from the root
 * through "properties" alone (not items, allOf/anyOf/oneOf/not,
 * if/then/else, $ref or $defs), of "type" string, integer or boolean, and
 * name a non-empty RFC 9110 token unique in the schema ignoring case; a
 * schema breaking one of these rules is a broken tool definition
 * (clients drop such tools).  On success *out (NULL when *n is 0) is
 * freed with tools_headers_free().  Returns STATUS_OK, STATUS_INVALID
 * with err naming the schema location as a JSON pointer
 * ("#/properties/score: ..."), or STATUS_NOMEM; *out is NULL on failure.
 */
int tools_headers_index(const json_t *schema, struct tool_header **out,
			size_t *n, char *err, size_t errlen) WUR;
void tools_headers_free(struct tool_header *h, size_t n); /* NULL ok */

/*
 * The argument h mirrors: the value at h's property path in args
 * (borrowed), or NULL when absent or null, when the header is not
 * expected (a non-object on the way is left to schema validation).
 */
const json_t *tools_header_arg(const struct tool_header *h, const json_t *args);

/*
 * True when text, the header's value already decoded from =?base64?...?=
 * (NUL-terminated), equals the argument value: byte for byte for a
 * string, numerically for an integer ("42.0" and 42; the body may be
 * 42.0 too), "true"/"false" for a boolean.  A value of another JSON type
 * never matches.
 */
bool tools_header_matches(const struct tool_header *h, const json_t *value,
			  const char *text);

#endif
