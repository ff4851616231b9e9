/*
 * prompts.h - the investigation prompts, completions and the live context
 * they carry (Coral RFD 054): the store's services (busiest first, with
 * namespace), GenAI models, recent trace and session ids, held in memory
 * and refreshed from the store in the background.
 */
#ifndef SEXTANT_PROMPTS_H
#define SEXTANT_PROMPTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

struct server;

/* Registers the five prompts in srv->catalog (start-up only). */
int prompts_register_catalog(struct server *srv) WUR;

/*
 * The tool that reads a template resource: sextant://services/{service}
 * (query_metrics: the service's requests, errors and P95 of the last hour
 * against the hour before), sextant://traces/{trace_id} (get_trace),
 * sextant://sessions/{session_id} (get_session).  On a match sets *tool
 * (static) and *args (new object with the decoded variable) and returns
 * STATUS_OK; STATUS_NOTFOUND for any other uri; STATUS_NOMEM.
 */
int prompts_read_tool(const char *uri, const char **tool, json_t **args) WUR;

/*
 * Whether uri is one of a template's (sextant://services/..., traces/...,
 * sessions/...): figures computed on each read, with no updates to
 * subscribe to (resources/subscribe refuses them).
 */
bool prompts_template_uri(const char *uri);

/*
 * completion/complete from the cache: values for argument arg (a prompt
 * argument or a template variable) starting with value first (ignoring
 * case), then the others within a small edit distance, at most 100.
 * *values: new array; *total: how many matched in all.  Never queries the
 * store (a stale cache asks for a background refresh).  STATUS_NOMEM.
 */
int prompts_complete(struct server *srv, const char *arg, const char *value,
		     json_t **values, size_t *total) WUR;

/*
 * The initialize instructions: base, then the short extraction rules and
 * the services known now.  Caller frees.  NULL on NOMEM.
 */
char *prompts_instructions(struct server *srv, const char *base);

#endif
