/*
 * test_timeline.c - lib/telemetry/timeline: the step argument (pure):
 * accepted forms, the whole-minute rule, the bound on points and the
 * messages that say what to use.  The statement is driven end to end by
 * test/integration/query.test.mjs (query_metrics step).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "telemetry/pointquery.h"
#include "telemetry/timeline.h"

#define MIN_MS	60000LL
#define HOUR_MS (60 * MIN_MS)
#define DAY_MS	(24 * HOUR_MS)
/* 2025-11-21T10:00:00Z */
#define T0 1763719200000LL

static const struct {
	int64_t from_ms, to_ms;
	const char *step;
	int64_t want;	   /* 0: refused */
	const char *error; /* part of the message when refused */
} cases[] = {
	{T0, T0 + HOUR_MS, "1m", 60, NULL},
	{T0, T0 + DAY_MS, "5m", 300, NULL},
	{T0, T0 + DAY_MS, "1h", 3600, NULL},
	{T0, T0 + 7 * DAY_MS, "1d", 86400, NULL},
	{T0, T0 + HOUR_MS, "120s", 120, NULL},
	{T0, T0 + HOUR_MS, "90m", 5400, NULL},
	/* 360 points exactly, and one more (an unaligned start) */
	{T0, T0 + 360 * MIN_MS, "1m", 60, NULL},
	{T0 + 1, T0 + 360 * MIN_MS + 1, "1m", 0,
	 "step \"1m\" gives 361 points per series over this time range, more "
	 "than 360: "
	 "use a step of at least \"2m\" or a shorter time_range"},
	{T0, T0 + DAY_MS, "1m", 0, "use a step of at least \"5m\""},
	{T0, T0 + HOUR_MS, "30s", 0,
	 "step \"30s\" is not a whole number of minutes: use \"1m\" or more"},
	{T0, T0 + HOUR_MS, "5x", 0,
	 "step \"5x\" is not understood: use whole minutes, hours or days, "
	 "like \"1m\", \"5m\", \"1h\", \"1d\""},
	{T0, T0 + HOUR_MS, "0m", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "-5m", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "5 m", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "5mm", 0, "is not understood"},
	{T0, T0 + HOUR_MS, "", 0, "step \"\" is not understood"},
	{T0, T0 + HOUR_MS, NULL, 0, "is not understood"},
	{T0, T0 + HOUR_MS, "99999999999999999999m", 0, "is not understood"},
};

static void
test_step(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char err[256];
		int64_t s = -1;
		int rc = timeline_step(cases[i].from_ms, cases[i].to_ms,
				       cases[i].step, &s, err, sizeof(err));

		if (cases[i].want > 0) {
			if (rc != STATUS_OK)
				fail_msg("case %zu: %s", i, err);
			assert_int_equal(s, cases[i].want);
			assert_string_equal(err, "");
			assert_true(pointquery_step_count(cases[i].from_ms,
							  cases[i].to_ms, s) <=
				    TIMELINE_MAX_STEPS);
			continue;
		}
		assert_int_equal(rc, STATUS_INVALID);
		assert_int_equal(s, 0);
		if (strstr(err, cases[i].error) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err,
				 cases[i].error);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_step),
	};

	return cmocka_run_group_tests_name("timeline", tests, NULL, NULL);
}
