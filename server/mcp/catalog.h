/*
 * catalog.h - resources and prompts offered to clients: one catalog per
 * server (srv->catalog), like the tool registry.
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
	 * arg: what was registered with the definition.  STATUS_NOTFOUND
	 * when uri is not served (templates).
	 */
	int (*read)(const char *uri, void *arg, json_t **contents);
	/* JSON text of the listed entry's _meta (an object), or NULL */
	const char *meta;
};

struct resource_template_def {
	const char
		*uri_template; /* RFC 6570, e.g. "test://template/{id}/data" */
	const char *name;
	const char *title;
	const char *description;
	const char *mime_type;
	/* as resource_def's; NOTFOUND if no match */
	int (*read)(const char *uri, void *arg, json_t **contents);
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

struct catalog;

/* An empty catalog (STATUS_NOMEM); catalog_free accepts NULL. */
int catalog_new(struct catalog **out) WUR;
void catalog_free(struct catalog *cat);

/* Registration (start-up only; the definitions, and arg, must outlive the
 * catalog).  arg is handed to the definition's read callback. */
int catalog_add_resource(struct catalog *cat, const struct resource_def *def,
			 void *arg) WUR;
int catalog_add_template(struct catalog *cat,
			 const struct resource_template_def *def,
			 void *arg) WUR;
int catalog_add_prompt(struct catalog *cat, const struct prompt_def *def) WUR;

/* Lookups for the dispatcher, in registration order. */
size_t catalog_resource_count(const struct catalog *cat);
const struct resource_def *catalog_resource_at(const struct catalog *cat,
					       size_t i);
size_t catalog_template_count(const struct catalog *cat);
const struct resource_template_def *
catalog_template_at(const struct catalog *cat, size_t i);
size_t catalog_prompt_count(const struct catalog *cat);
const struct prompt_def *catalog_prompt_at(const struct catalog *cat, size_t i);
const struct prompt_def *catalog_prompt_find(const struct catalog *cat,
					     const char *name);
/* Reads uri from resources then templates; STATUS_NOTFOUND if none. */
int catalog_read(const struct catalog *cat, const char *uri,
		 json_t **contents) WUR;

#endif
