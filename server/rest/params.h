/*
 * params.h - query parameters onto tool arguments: the REST facade's GETs
 * map ?name=value onto the tool argument of the same name, converted by
 * the type its inputSchema gives (integer, number, boolean, array as
 * repeated parameters or comma-separated, object as JSON, string).
 * Pure: jansson only, no HTTP.
 */
#ifndef SEXTANT_REST_PARAMS_H
#define SEXTANT_REST_PARAMS_H

#include <jansson.h>

#include "base/status.h"

/* One refused parameter, for a problem+json "errors" item. */
struct rest_param_error {
	char field[128];    /* the parameter (the argument's name) */
	char expected[128]; /* "integer", "one of the accepted parameters" */
	char given[128];    /* the value as sent, cut to fit */
	char message[384];  /* a sentence for people */
};

/* Longest query value kept (bytes): past it a parameter is refused, so
 * that no argument grows past what a URL of MHD's header limit holds. */
#define REST_PARAM_MAX 8192

/*
 * Adds key=value (value NULL: the parameter came without "=") to args
 * (an object, changed in place), converted by the schema of property key
 * in props (inputSchema's "properties", borrowed).  An array property
 * appends: each occurrence may carry several comma-separated items.
 * Returns STATUS_OK; STATUS_NOTFOUND when props has no such property,
 * STATUS_INVALID when the value does not convert or a single-valued
 * parameter comes twice (err filled either way); STATUS_NOMEM.
 */
int rest_param_add(const json_t *props, json_t *args, const char *key,
		   const char *value, struct rest_param_error *err) WUR;

/* The JSON type a property schema names ("integer", ...): the first of a
 * "type" array other than "null"; an enum's first value's type; else
 * "string".  Borrowed static text. */
const char *rest_param_type(const json_t *schema);

/*
 * Kiali's clients send camelCase argument names (traceId, lookbackSeconds)
 * where Sextant's tools take snake_case (trace_id, lookback_seconds), and
 * Kiali's own tools accept both: renames each key of args (changed in
 * place) that props (inputSchema's "properties") lacks but whose snake_case
 * form it has and args does not hold already.  Other keys are left for the
 * schema to refuse.  STATUS_OK or STATUS_NOMEM.
 */
int rest_snake_args(const json_t *props, json_t *args) WUR;

#endif
