/*
 * test_health.c - unit tests for lib/telemetry/health: Kiali's threshold
 * rule at and around each tolerance, the worse rate deciding, configured
 * tolerances, and no verdict without requests.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "telemetry/health.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	uint64_t requests, errors, client_errors;
	enum health_status want;
} cases[] = {
	{0, 0, 0, HEALTH_NA},
	{100, 0, 0, HEALTH_HEALTHY},
	/* any error degrades at Kiali's 0% tolerance: 1 in 5,000 */
	{5000, 1, 0, HEALTH_DEGRADED},
	{1000, 99, 0, HEALTH_DEGRADED},
	{1000, 100, 0, HEALTH_UNHEALTHY}, /* 10% exactly */
	{1000, 1000, 0, HEALTH_UNHEALTHY},
	/* client errors: under 10% healthy, 10% degraded, 20% unhealthy */
	{1000, 0, 99, HEALTH_HEALTHY},
	{1000, 0, 100, HEALTH_DEGRADED},
	{1000, 0, 199, HEALTH_DEGRADED},
	{1000, 0, 200, HEALTH_UNHEALTHY},
	/* the worse of the two decides */
	{1000, 1, 250, HEALTH_UNHEALTHY},
	{1000, 150, 50, HEALTH_UNHEALTHY},
	{1000, 1, 50, HEALTH_DEGRADED},
	/* failed logins alone (6.7% UNAUTHENTICATED) stay healthy */
	{4061, 0, 272, HEALTH_HEALTHY},
	/* huge counts: no overflow */
	{UINT64_MAX, UINT64_MAX / 5, 0, HEALTH_UNHEALTHY},
};

static void
test_defaults(void **state)
{
	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		enum health_status got =
			health_judge(NULL, cases[i].requests, cases[i].errors,
				     cases[i].client_errors);

		if (got != cases[i].want)
			fail_msg("case %zu: %llu requests, %llu errors, %llu "
				 "client errors: got %s, want %s",
				 i, (unsigned long long)cases[i].requests,
				 (unsigned long long)cases[i].errors,
				 (unsigned long long)cases[i].client_errors,
				 health_name(got), health_name(cases[i].want));
	}
}

static void
test_configured(void **state)
{
	/* a tolerant service: 1% errors before degraded, 5% unhealthy */
	struct health_tolerances t = {1, 5, 50, 80};

	(void)state;
	assert_int_equal(health_judge(&t, 1000, 9, 0), HEALTH_HEALTHY);
	assert_int_equal(health_judge(&t, 1000, 10, 0), HEALTH_DEGRADED);
	assert_int_equal(health_judge(&t, 1000, 50, 0), HEALTH_UNHEALTHY);
	assert_int_equal(health_judge(&t, 1000, 0, 499), HEALTH_HEALTHY);
	assert_int_equal(health_judge(&t, 1000, 0, 800), HEALTH_UNHEALTHY);
	/* a 0 unhealthy tolerance still needs an error to judge */
	t.error_unhealthy = 0;
	assert_int_equal(health_judge(&t, 1000, 0, 0), HEALTH_HEALTHY);
	assert_int_equal(health_judge(&t, 1000, 1, 0), HEALTH_UNHEALTHY);
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(health_name(HEALTH_HEALTHY), "HEALTHY");
	assert_string_equal(health_name(HEALTH_DEGRADED), "DEGRADED");
	assert_string_equal(health_name(HEALTH_UNHEALTHY), "UNHEALTHY");
	assert_string_equal(health_name(HEALTH_NA), "NA");
	assert_int_equal(health_worse(HEALTH_NA, HEALTH_HEALTHY),
			 HEALTH_HEALTHY);
	assert_int_equal(health_worse(HEALTH_UNHEALTHY, HEALTH_DEGRADED),
			 HEALTH_UNHEALTHY);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_configured),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
