/*
 * health.h - request health verdicts (HEALTHY, DEGRADED, UNHEALTHY) from
 * error and client-error rates, by Kiali's rule: a rate above 0 and at
 * least a tolerance's "degraded" percentage is DEGRADED, at least its
 * "unhealthy" percentage UNHEALTHY; the worse of the two rates decides.
 * Errors and client errors are sextant_span_outcome's (migration 0012):
 * failed logins (client errors) do not make a service unhealthy at
 * Kiali's 5xx tolerance, only at the 4xx one.
 */
#ifndef SEXTANT_TELEMETRY_HEALTH_H
#define SEXTANT_TELEMETRY_HEALTH_H

#include <stdint.h>

enum health_status {
	HEALTH_NA,	  /* no requests: nothing to judge */
	HEALTH_HEALTHY,	  /* within tolerances */
	HEALTH_DEGRADED,  /* a rate at its "degraded" tolerance */
	HEALTH_UNHEALTHY, /* a rate at its "unhealthy" tolerance */
};

/* Percentages, 0 to 100 ([health] in the configuration). */
struct health_tolerances {
	double error_degraded, error_unhealthy;
	double client_error_degraded, client_error_unhealthy;
};

/* Kiali's defaults: errors 0 / 10, client errors 10 / 20. */
extern const struct health_tolerances health_defaults;

/* The verdict on requests calls with errors and client_errors of them. */
enum health_status health_judge(const struct health_tolerances *t,
				uint64_t requests, uint64_t errors,
				uint64_t client_errors);

/* "HEALTHY", "DEGRADED", "UNHEALTHY", "NA". */
const char *health_name(enum health_status s);

/* The worse of two verdicts (NA only when both are). */
enum health_status health_worse(enum health_status a, enum health_status b);

#endif
