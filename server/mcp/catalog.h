/*
 * catalog.h - resources and prompts offered to clients.
 *
 * Entries are registered at start-up (before the server accepts
 * connections) and read-only afterwards, so lookups take no lock.
 * Read and get callbacks run on MHD threads: they must be quick and must
 * not block.
 */
#ifndef SEXTANT_CATALOG_H
#define SEXTANT_CATALOG_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"

struct resource_def {
	const char *uri;
	const char *name;
	const char *title;	 /* may be NULL */
	const char *description; /* may be NULL */
	const char *mime_type;	 /* may be NULL */
	/*
	 * Sets *contents to a new array of {uri, mimeType, text|blob}.
	 * STATUS_NOTFOUND when uri is not served (templates).
	 */
	int (*read)(const char *uri, json_t **contents);
};

struct resource_template_def {
	const char
		*uri_template; /* RFC 6570, e.g. "test://template/{id}/data" */
	const char *name;
	const char *title;
	const char *description;
	const char *mime_type;
	int (*read)(const char *uri,
		    json_t **contents); /* NOTFOUND if no match */
};

struct prompt_arg_def {
	const char *name;
	const char *description;
	int required; /* 1 = required */
};

struct prompt_def {
	const char *name;
	const char *title;
	const char *description;
	const struct prompt_arg_def *args; /* NULL-name terminated, or NULL */
	/*
	 * args: the client's {name: string} object (may be NULL).  Sets
	 * *result to a GetPromptResult ({description?, messages}).  On bad
	 * arguments returns STATUS_INVALID with a message in err naming the
	 * argument (required arguments are checked by the caller already).
	 */
	int (*get)(const json_t *args, json_t **result, char *err,
		   size_t errlen);
	/*
	 * Instead of get, for a prompt that needs the client's input
	 * (2026-07-28 requests only): input is the request's inputResponses
	 * (NULL when none).  When an answer is missing, returns STATUS_AGAIN
	 * with *result the {key: {method, params}} requests to send in an
	 * input_required result; else as get.
	 */
	int (*get_input)(const json_t *args, const json_t *input,
			 json_t **result, char *err, size_t errlen);
	/*
	 * Optional: completion/complete for argument `arg` with prefix
	 * `value`.  Sets *values to a new array of at most 100 strings.
	 */
	int (*complete)(const char *arg, const char *value, json_t **values);
};

/* Registration (start-up only; the definitions must outlive the server). */
int catalog_add_resource(const struct resource_def *def) WUR;
int catalog_add_template(const struct resource_template_def *def) WUR;
int catalog_add_prompt(const struct prompt_def *def) WUR;
void catalog_reset(void); /* drops all registrations (tests, shutdown) */

/* Lookups for the dispatcher.  The resources are the registered ones,
 * then the skill files of skills.h (always served, conformance mode
 * included: catalog_reset keeps them). */
size_t catalog_resource_count(void);
const struct resource_def *catalog_resource_at(size_t i);
size_t catalog_template_count(void);
const struct resource_template_def *catalog_template_at(size_t i);
size_t catalog_prompt_count(void);
const struct prompt_def *catalog_prompt_at(size_t i);
const struct prompt_def *catalog_prompt_find(const char *name);
/* Reads uri from resources then templates; STATUS_NOTFOUND if none. */
int catalog_read(const char *uri, json_t **contents) WUR;

#endif
