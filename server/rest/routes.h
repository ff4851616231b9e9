/*
 * routes.h - the REST facade's resource routes: each a thin mapping of a
 * URL onto one tool's arguments.
 *
 * One table serves the facade (rest.c: which tool a GET runs, with which
 * arguments) and the OpenAPI document (openapi.c: which paths exist, which
 * parameters they take).  A route's path parameters are named here; every
 * other query parameter maps onto the tool argument of the same name,
 * typed by the tool's inputSchema.
 */
#ifndef SEXTANT_REST_ROUTES_H
#define SEXTANT_REST_ROUTES_H

#include <stdbool.h>
#include <stddef.h>

#define REST_MAX_PATH_PARAMS 2

/* A path parameter: "{service}" in the path, the tool argument "service". */
struct rest_path_param {
	const char *name; /* as in the path template, without braces */
	const char *arg;  /* the tool argument it fills */
};

struct rest_route {
	const char *path; /* template: "/api/v1/services/{service}/metrics" */
	const char *tool; /* the tool a GET runs */
	const char *summary;
	struct rest_path_param params[REST_MAX_PATH_PARAMS];
	size_t nparams;
	/* its OpenAPI operationId; NULL: "<tool>_resource" (a second route
	 * of one tool names its own) */
	const char *operation;
};

extern const struct rest_route rest_routes[];
extern const size_t rest_nroutes;

/*
 * The route whose template matches path (no query string; already
 * percent-decoded or not: matching compares segment by segment and a
 * parameter takes one whole non-empty segment).  On a match, values[i]
 * points into path at the i-th parameter's segment and lens[i] is its
 * length.  NULL when no route matches.
 */
const struct rest_route *
rest_route_match(const char *path, const char *values[REST_MAX_PATH_PARAMS],
		 size_t lens[REST_MAX_PATH_PARAMS]);

#endif
