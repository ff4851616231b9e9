/*
 * routes.c - the REST facade's resource routes (see routes.h).
 */
#include "rest/routes.h"

#include <string.h>

const struct rest_route rest_routes[] = {
	{"/api/v1/services",
	 "list_services",
	 "Services with request rate, errors, P95 and health",
	 {{0}},
	 0},
	{"/api/v1/services/{service}/metrics",
	 "query_metrics",
	 "A service's RED metrics by route, method or operation",
	 {{"service", "service"}},
	 1},
	{"/api/v1/services/{service}/traces",
	 "query_traces",
	 "A service's slowest or failing traces",
	 {{"service", "service"}},
	 1},
	{"/api/v1/traces/{trace_id}",
	 "get_trace",
	 "One trace as a span tree",
	 {{"trace_id", "trace_id"}},
	 1},
	{"/api/v1/traces/{trace_id}/spans/{span_id}",
	 "get_trace",
	 "One span whole: attributes, resource, events and links",
	 {{"trace_id", "trace_id"}, {"span_id", "span_id"}},
	 2,
	 "get_span_resource"},
	{"/api/v1/spans",
	 "query_spans",
	 "Spans matching filters, paged",
	 {{0}},
	 0},
	{"/api/v1/sessions/{session_id}",
	 "get_session",
	 "One GenAI session's calls, tokens and cost",
	 {{"session_id", "session_id"}},
	 1},
	{"/api/v1/genai/usage",
	 "analyze_genai",
	 "GenAI usage and cost by model",
	 {{0}},
	 0},
	{"/api/v1/graph",
	 "get_mesh_graph",
	 "The service graph with Kiali's health summary",
	 {{0}},
	 0},
	{"/api/v1/metrics/{name}",
	 "query_telemetry_metrics",
	 "An OTLP metric's points",
	 {{"name", "name"}},
	 1},
};

const size_t rest_nroutes = sizeof(rest_routes) / sizeof(rest_routes[0]);

/* Matches one template against path; fills values/lens. */
static bool
match_one(const char *tpl, const char *path, const char **values, size_t *lens)
{
	size_t k = 0;

	while (*tpl != '\0' && *path != '\0') {
		if (*tpl == '{') {
			const char *end = strchr(path, '/');
			size_t n = end != NULL ? (size_t)(end - path)
					       : strlen(path);

			if (n == 0 || k == REST_MAX_PATH_PARAMS)
				return false;
			values[k] = path;
			lens[k++] = n;
			path += n;
			tpl = strchr(tpl, '}');
			if (tpl == NULL)
				return false;
			tpl++;
			continue;
		}
		if (*tpl != *path)
			return false;
		tpl++;
		path++;
	}
	return *tpl == '\0' && *path == '\0';
}

const struct rest_route *
rest_route_match(const char *path, const char *values[REST_MAX_PATH_PARAMS],
		 size_t lens[REST_MAX_PATH_PARAMS])
{
	for (size_t i = 0; i < rest_nroutes; i++)
		if (match_one(rest_routes[i].path, path, values, lens))
			return &rest_routes[i];
	return NULL;
}
