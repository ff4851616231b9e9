/*
 * instances.h - the registry of metrics instances: one lib/prom/grafana
 * client per [grafana.<name>] / [prometheus.<name>] table.  Built once at
 * start-up, read-only afterwards: thread-safe to read.
 */
#ifndef SEXTANT_INSTANCES_H
#define SEXTANT_INSTANCES_H

#include <stddef.h>

#include "base/status.h"

struct server;
struct instances;
struct grafana;
struct promcalls_spec;

/*
 * Builds a client per configured instance into srv->instances (NULL when
 * none is configured) and registers the sextant_grafana_* metric families
 * (circuit state, in-flight and waiting queries, requests, retries, cache
 * hits and misses, labelled by instance).  Nothing is sent upstream yet.
 * STATUS_INVALID / STATUS_NOMEM with err naming the instance.  Called
 * once from boot_init.
 */
int instances_init(struct server *srv, char *err, size_t errlen) WUR;

/* Frees srv->instances.  No call may be running (after pool_free). */
void instances_free(struct server *srv);

/*
 * The instance called name, or the default (the first configured) when
 * name is NULL or "".  NULL when none is configured or no such name.
 * Borrowed: valid until instances_free.  gi may be NULL (none).
 */
struct grafana *instances_get(const struct instances *gi, const char *name);

/* How many there are, and the i-th in file order (NULL past the end). */
size_t instances_count(const struct instances *gi);
struct grafana *instances_at(const struct instances *gi, size_t i);

/*
 * The instance whose services key names service (an exact "name" or
 * "name=<label value>", or "*"; the first instance in file order that
 * does), with where its series are filled into *spec.  NULL when none
 * does.  Borrowed like instances_get; spec's strings too.
 */
struct grafana *instances_for_service(const struct instances *gi,
				      const char *service,
				      struct promcalls_spec *spec);

#endif
