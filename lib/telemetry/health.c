/*
 * health.c - request health verdicts; see health.h.
 */
#include "telemetry/health.h"

#include <stddef.h>

const struct health_tolerances health_defaults = {
	.error_degraded = 0,
	.error_unhealthy = 10,
	.client_error_degraded = 10,
	.client_error_unhealthy = 20,
};

/* Kiali's ascending threshold check on a percentage: nothing when it is
 * 0, then the unhealthy bound before the degraded one. */
static enum health_status
rate_status(uint64_t part, uint64_t whole, double degraded, double unhealthy)
{
	double pct;

	if (part == 0)
		return HEALTH_HEALTHY;
	pct = 100.0 * (double)part / (double)whole;
	if (pct >= unhealthy)
		return HEALTH_UNHEALTHY;
	if (pct >= degraded)
		return HEALTH_DEGRADED;
	return HEALTH_HEALTHY;
}

enum health_status
health_judge(const struct health_tolerances *t, uint64_t requests,
	     uint64_t errors, uint64_t client_errors)
{
	if (requests == 0)
		return HEALTH_NA;
	if (t == NULL)
		t = &health_defaults;
	return health_worse(rate_status(errors, requests, t->error_degraded,
					t->error_unhealthy),
			    rate_status(client_errors, requests,
					t->client_error_degraded,
					t->client_error_unhealthy));
}

const char *
health_name(enum health_status s)
{
	switch (s) {
	case HEALTH_NA: return "NA";
	case HEALTH_HEALTHY: return "HEALTHY";
	case HEALTH_DEGRADED: return "DEGRADED";
	case HEALTH_UNHEALTHY: return "UNHEALTHY";
	}
	return "NA";
}

enum health_status
health_worse(enum health_status a, enum health_status b)
{
	return a > b ? a : b;
}
