/*
 * instances.c - the registry of metrics instances: one lib/prom/grafana
 * client per [grafana.<name>] / [prometheus.<name>] table, built at
 * start-up with its /metrics gauges, read by the tools that ask them
 * (query_grafana_metrics, query_metrics' [Prometheus] source).
 */
#include "core/instances.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/expo.h"
#include "conf/config.h"
#include "core/server.h"
#include "prom/grafana.h"
#include "telemetry/promcalls.h"

struct instances {
	const struct config *cfg; /* borrowed: the server's */
	struct grafana **v;
	size_t n;
};

int
instances_init(struct server *srv, char *err, size_t errlen)
{
	const struct config *cfg = srv->cfg;
	struct instances *gi;
	struct expo_family *state, *opens, *inflight, *waiting, *requests,
		*retries, *cache;
	char why[512];

	srv->instances = NULL;
	if (cfg->instances.n == 0)
		return STATUS_OK;
	gi = calloc(1, sizeof(*gi));
	if (gi == NULL ||
	    (gi->v = calloc(cfg->instances.n, sizeof(*gi->v))) == NULL) {
		free(gi);
		snprintf(err, errlen,
			 "out of memory creating metrics instances");
		return STATUS_NOMEM;
	}
	gi->cfg = cfg;
	srv->instances = gi;
	state = expo_family(srv->expo, EXPO_GAUGE,
			    "sextant_grafana_circuit_state",
			    "Circuit breaker of each metrics instance: 0 "
			    "closed, 1 half-open, 2 open",
			    "instance", NULL, 0);
	opens = expo_family(srv->expo, EXPO_COUNTER,
			    "sextant_grafana_circuit_opens_total",
			    "Times the circuit breaker of each metrics "
			    "instance opened",
			    "instance", NULL, 0);
	inflight = expo_family(srv->expo, EXPO_GAUGE,
			       "sextant_grafana_inflight_queries",
			       "Upstream requests running per metrics "
			       "instance (at most max_concurrent)",
			       "instance", NULL, 0);
	waiting = expo_family(srv->expo, EXPO_GAUGE,
			      "sextant_grafana_waiting_queries",
			      "Requests waiting for a free upstream slot per "
			      "metrics instance",
			      "instance", NULL, 0);
	requests = expo_family(
		srv->expo, EXPO_COUNTER, "sextant_grafana_requests_total",
		"Upstream HTTP attempts per metrics instance by outcome (ok: "
		"an answer below 500; failed: connection error, timeout or "
		"5xx)",
		"instance,outcome", NULL, 0);
	retries = expo_family(srv->expo, EXPO_COUNTER,
			      "sextant_grafana_retries_total",
			      "Retries after a connection error or 5xx per "
			      "metrics instance",
			      "instance", NULL, 0);
	cache = expo_family(srv->expo, EXPO_COUNTER,
			    "sextant_grafana_cache_lookups_total",
			    "Metric-name and metadata cache lookups per "
			    "metrics instance (cache: names, metadata; "
			    "result: hit, miss)",
			    "instance,cache,result", NULL, 0);
	if (state == NULL || opens == NULL || inflight == NULL ||
	    waiting == NULL || requests == NULL || retries == NULL ||
	    cache == NULL) {
		snprintf(err, errlen, "cannot register the grafana metrics");
		return STATUS_NOMEM;
	}
	for (size_t i = 0; i < cfg->instances.n; i++) {
		const struct config_instance *in = &cfg->instances.v[i];
		const char *name = in->name;
		struct grafana_config gc = {
			.name = in->name,
			.kind = in->kind == CONFIG_INSTANCE_GRAFANA
					? GRAFANA_KIND_GRAFANA
					: GRAFANA_KIND_PROMETHEUS,
			.url = in->url,
			.datasource_uid = in->datasource_uid,
			.datasource_name = in->datasource_name,
			.token = in->token,
			.token_file = in->token_file,
			.ca_file = in->ca_file,
			.connect_timeout_ms = in->connect_timeout_ms,
			.timeout_ms = in->timeout_ms,
			.max_response_bytes = (size_t)in->max_response_bytes,
			.max_concurrent = in->max_concurrent,
			.queue_timeout_ms = in->queue_timeout_ms,
			.retries = in->retries,
			.retry_base_ms = in->retry_base_ms,
			.breaker_failures = in->breaker_failures,
			.breaker_cooldown_ms = in->breaker_cooldown_s * 1000,
			.names_ttl_ms = in->names_ttl_s * 1000,
			.metadata_ttl_ms = in->metadata_ttl_s * 1000,
		};
		struct grafana_metrics gm = {
			.circuit_state = expo_series(state, &name),
			.circuit_opens = expo_series(opens, &name),
			.inflight = expo_series(inflight, &name),
			.waiting = expo_series(waiting, &name),
			.requests_ok = expo_series(
				requests, (const char *[]){name, "ok"}),
			.requests_failed = expo_series(
				requests, (const char *[]){name, "failed"}),
			.retries = expo_series(retries, &name),
			.names_hits = expo_series(
				cache, (const char *[]){name, "names", "hit"}),
			.names_misses = expo_series(
				cache, (const char *[]){name, "names", "miss"}),
			.meta_hits = expo_series(
				cache,
				(const char *[]){name, "metadata", "hit"}),
			.meta_misses = expo_series(
				cache,
				(const char *[]){name, "metadata", "miss"}),
		};
		int rc = grafana_new(&gc, &gm, &gi->v[i], why, sizeof(why));

		if (rc != STATUS_OK) {
			snprintf(err, errlen, "%s.%s: %s",
				 in->kind == CONFIG_INSTANCE_GRAFANA
					 ? "grafana"
					 : "prometheus",
				 in->name, why);
			return rc;
		}
		gi->n = i + 1;
	}
	return STATUS_OK;
}

void
instances_free(struct server *srv)
{
	struct instances *gi = srv->instances;

	if (gi == NULL)
		return;
	for (size_t i = 0; i < gi->n; i++)
		grafana_free(gi->v[i]);
	free(gi->v);
	free(gi);
	srv->instances = NULL;
}

struct grafana *
instances_get(const struct instances *gi, const char *name)
{
	if (gi == NULL || gi->n == 0)
		return NULL;
	if (name == NULL || name[0] == '\0')
		return gi->v[0];
	for (size_t i = 0; i < gi->n; i++)
		if (strcmp(grafana_name(gi->v[i]), name) == 0)
			return gi->v[i];
	return NULL;
}

struct grafana *
instances_for_service(const struct instances *gi, const char *service,
		      struct promcalls_spec *spec)
{
	for (size_t i = 0; gi != NULL && service != NULL && i < gi->n; i++) {
		const struct config_instance *in = &gi->cfg->instances.v[i];

		for (size_t j = 0; j < in->services.n; j++) {
			const char *item = in->services.v[j];
			const char *eq = strchr(item, '=');
			size_t n =
				eq != NULL ? (size_t)(eq - item) : strlen(item);

			if (strcmp(item, "*") != 0 &&
			    (strncmp(item, service, n) != 0 ||
			     service[n] != '\0'))
				continue;
			memset(spec, 0, sizeof(*spec));
			spec->service_label = in->service_label;
			spec->service_value = eq != NULL ? eq + 1 : service;
			spec->metric[SPANQUERY_HTTP] = in->http_metric;
			spec->metric[SPANQUERY_GRPC] = in->grpc_metric;
			spec->metric[SPANQUERY_SQL] = in->sql_metric;
			return gi->v[i];
		}
	}
	return NULL;
}

size_t
instances_count(const struct instances *gi)
{
	return gi != NULL ? gi->n : 0;
}

struct grafana *
instances_at(const struct instances *gi, size_t i)
{
	return gi != NULL && i < gi->n ? gi->v[i] : NULL;
}
