/*
 * test_timerange.c - unit tests for lib/base/timerange: every accepted time_range
 * and from/to form, every error with its field and hint, exact messages,
 * formatting and describing; glibc's timegm / gmtime_r serve as the oracle.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/timerange.h"

#define SEC  INT64_C(1000)
#define MIN  (60 * SEC)
#define HOUR (60 * MIN)
#define DAY  (24 * HOUR)

#define RANGE_HINT                                                             \
	"use a duration like \"15m\", \"1h\", \"24h\", \"7d\", a phrase like " \
	"\"last hour\", \"past 2 days\", \"today\", \"yesterday\", \"since "   \
	"yesterday 3pm\", \"between 10:00 and 11:30 UTC\", \"this "            \
	"morning\", or from/to in ISO 8601 (\"2026-11-21T10:00:00Z\")"
#define TIME_HINT                                                              \
	"use ISO 8601 / RFC 3339 like \"2026-11-21T10:00:00Z\", "              \
	"\"2026-11-21T10:00:00.123+02:00\", \"2026-11-21 10:00\" or "          \
	"\"2026-11-21\" (midnight UTC)"

/* A UTC calendar time; y == 0 in a table row means "now". */
struct civil {
	int y, mo, d, h, mi, s, ms;
};

/* The oracle: glibc's timegm, independent of the days-from-civil code. */
static int64_t
utc(struct civil c)
{
	struct tm tm = {0};

	tm.tm_year = c.y - 1900;
	tm.tm_mon = c.mo - 1;
	tm.tm_mday = c.d;
	tm.tm_hour = c.h;
	tm.tm_min = c.mi;
	tm.tm_sec = c.s;
	return (int64_t)timegm(&tm) * SEC + c.ms;
}

/* 2026-11-21T10:30:15.250Z */
static const struct civil now_civil = {2026, 11, 21, 10, 30, 15, 250};

static int64_t
now(void)
{
	return utc(now_civil);
}

/* ---- relative forms: [now - back_ms, now) ----------------------------- */

struct rel_case {
	const char *range;
	int64_t back_ms;
};

static const struct rel_case rel_cases[] = {
	{"15m", 15 * MIN},
	{"1h", HOUR},
	{"24h", 24 * HOUR},
	{"7d", 7 * DAY},
	{"30s", 30 * SEC},
	{"2w", 14 * DAY},
	{"30 min", 30 * MIN},
	{"2 hours", 2 * HOUR},
	{"90 minutes", 90 * MIN},
	{"1 day", DAY},
	{"3 weeks", 21 * DAY},
	{"last hour", HOUR},
	{"last 30 minutes", 30 * MIN},
	{"past 2 days", 2 * DAY},
	{"past day", DAY},
	{"last week", 7 * DAY},
	{"last 24h", 24 * HOUR},
	{"last minute", MIN},
	{"past 15 min", 15 * MIN},
	{"  1H  ", HOUR},
	{"\t15m\n", 15 * MIN},
	{"LAST HOUR", HOUR},
	{"Past 2 Days", 2 * DAY},
	{"last   2   hours", 2 * HOUR},
	{"last\t1h", HOUR},
	{"1h30m", 90 * MIN},
	{"1 hour 30 min", 90 * MIN},
	{"1d 2h 3m 4s", DAY + 2 * HOUR + 3 * MIN + 4 * SEC},
	{"1.5h", 90 * MIN},
	{"0.5 s", 500},
	{"1.0001s", SEC},
	{"007m", 7 * MIN},
	{"1 sec", SEC},
	{"5 secs", 5 * SEC},
	{"10 seconds", 10 * SEC},
	{"1 second", SEC},
	{"3 mins", 3 * MIN},
	{"1 minute", MIN},
	{"2 hrs", 2 * HOUR},
	{"1hr", HOUR},
	{"1 hour", HOUR},
	{"2 days", 2 * DAY},
	{"1 wk", 7 * DAY},
	{"2 wks", 14 * DAY},
	{"1 week", 7 * DAY},
	{"400d", 400 * DAY},
	{"57w", 399 * DAY},
	{"9600h", 400 * DAY},
	{"last 400 days", 400 * DAY},
};

static void
test_relative(void **state)
{
	const int64_t t = now();

	(void)state;
	for (size_t i = 0; i < sizeof(rel_cases) / sizeof(rel_cases[0]); i++) {
		const struct rel_case *c = &rel_cases[i];
		struct timerange r = {-1, -1};
		char err[512] = "junk";

		if (timerange_parse(c->range, NULL, NULL, t, &r, err,
				    sizeof(err)) != STATUS_OK ||
		    err[0] != '\0' || r.to_ms != t ||
		    r.to_ms - r.from_ms != c->back_ms)
			fail_msg("case %zu \"%s\": [%lld, %lld) \"%s\"", i,
				 c->range, (long long)r.from_ms,
				 (long long)r.to_ms, err);
		/* "" for from/to counts as absent */
		assert_int_equal(
			timerange_parse(c->range, "", " ", t, &r, NULL, 0),
			STATUS_OK);
		assert_int_equal(r.to_ms - r.from_ms, c->back_ms);
	}
}

/* ---- calendar forms and from/to ---------------------------------------- */

struct abs_case {
	const char *range, *from, *to;
	struct civil want_from, want_to; /* want_to.y == 0: now */
};

static const struct abs_case abs_cases[] = {
	{"today", NULL, NULL, {2026, 11, 21}, {0}},
	{" Today ", NULL, NULL, {2026, 11, 21}, {0}},
	{"yesterday", NULL, NULL, {2026, 11, 20}, {2026, 11, 21}},
	{"YESTERDAY", NULL, NULL, {2026, 11, 20}, {2026, 11, 21}},
	{NULL, "2026-11-21T10:00:00Z", NULL, {2026, 11, 21, 10}, {0}},
	{NULL,
	 "2026-11-21T10:00:00Z",
	 "2026-11-21T11:00:00Z",
	 {2026, 11, 21, 10},
	 {2026, 11, 21, 11}},
	{NULL,
	 "2026-11-21T10:00:00.123+02:00",
	 NULL,
	 {2026, 11, 21, 8, 0, 0, 123},
	 {0}},
	{NULL, "2026-11-21 10:00", NULL, {2026, 11, 21, 10}, {0}},
	{NULL, "2026-11-21", NULL, {2026, 11, 21}, {0}},
	{NULL, "2026-11-20", "2026-11-21", {2026, 11, 20}, {2026, 11, 21}},
	{NULL, "2026-11-21t08:00:00z", NULL, {2026, 11, 21, 8}, {0}},
	{NULL, "2026-11-21T10:00:00", NULL, {2026, 11, 21, 10}, {0}},
	{NULL,
	 "2026-11-21T10:00:00-05:30",
	 "2026-11-21T16:00Z",
	 {2026, 11, 21, 15, 30},
	 {2026, 11, 21, 16}},
	{NULL, "2026-11-21T10:00+0530", NULL, {2026, 11, 21, 4, 30}, {0}},
	{NULL, "2026-11-21T10:00+05", NULL, {2026, 11, 21, 5}, {0}},
	{NULL, "2026-11-21T10:00-00:00", NULL, {2026, 11, 21, 10}, {0}},
	{NULL, "2026-11-21T00:30+23:59", NULL, {2026, 11, 20, 0, 31}, {0}},
	{NULL,
	 "2026-11-21T10:00:00,5Z",
	 NULL,
	 {2026, 11, 21, 10, 0, 0, 500},
	 {0}},
	{NULL,
	 "2026-11-21T10:00:00.1Z",
	 NULL,
	 {2026, 11, 21, 10, 0, 0, 100},
	 {0}},
	{NULL,
	 "2026-11-21T10:00:00.123456789Z",
	 NULL,
	 {2026, 11, 21, 10, 0, 0, 123},
	 {0}},
	{NULL,
	 "2016-12-31T23:59:60Z",
	 "2017-01-01T00:00:01Z",
	 {2017, 1, 1},
	 {2017, 1, 1, 0, 0, 1}},
	{NULL, "2024-02-29", "2024-03-01", {2024, 2, 29}, {2024, 3, 1}},
	{NULL, "2000-02-29", "2000-03-01", {2000, 2, 29}, {2000, 3, 1}},
	{NULL, "2024-01-01", "2025-02-04", {2024, 1, 1}, {2025, 2, 4}},
	{NULL,
	 "1970-01-01T00:00:00Z",
	 "1970-01-02",
	 {1970, 1, 1},
	 {1970, 1, 2}},
	{NULL,
	 "9999-12-31T00:00:00Z",
	 "9999-12-31T23:59:59.999Z",
	 {9999, 12, 31},
	 {9999, 12, 31, 23, 59, 59, 999}},
	{NULL, "  2026-11-21T10:00:00Z\n", NULL, {2026, 11, 21, 10}, {0}},
	{NULL, "2026-11-21T10:00Z", "now", {2026, 11, 21, 10}, {0}},
	/* from/to win over range, even a bad one */
	{"1h", "2026-11-21T10:00:00Z", NULL, {2026, 11, 21, 10}, {0}},
	{"soon", "2026-11-21T10:00:00Z", NULL, {2026, 11, 21, 10}, {0}},
	{"",
	 "2026-11-21",
	 "2026-11-21T01:00Z",
	 {2026, 11, 21},
	 {2026, 11, 21, 1}},
};

static void
test_absolute(void **state)
{
	const int64_t t = now();

	(void)state;
	for (size_t i = 0; i < sizeof(abs_cases) / sizeof(abs_cases[0]); i++) {
		const struct abs_case *c = &abs_cases[i];
		struct timerange r = {-1, -1};
		char err[512] = "junk";

		if (timerange_parse(c->range, c->from, c->to, t, &r, err,
				    sizeof(err)) != STATUS_OK ||
		    err[0] != '\0' || r.from_ms != utc(c->want_from) ||
		    r.to_ms != (c->want_to.y ? utc(c->want_to) : t))
			fail_msg("case %zu \"%s\" \"%s\" \"%s\": [%lld, %lld) "
				 "\"%s\"",
				 i, c->range ? c->range : "(null)",
				 c->from ? c->from : "(null)",
				 c->to ? c->to : "(null)", (long long)r.from_ms,
				 (long long)r.to_ms, err);
	}
}

/* ---- errors ------------------------------------------------------------ */

struct err_case {
	const char *range, *from, *to;
	const char *want_start; /* the message starts so */
	const char *hint;	/* and contains this (what is accepted) */
};

static const struct err_case err_cases[] = {
	{NULL, NULL, NULL, "time_range \"\" is not understood: ", RANGE_HINT},
	{"", "", "", "time_range \"\" is not understood: ", RANGE_HINT},
	{" \t", NULL, NULL, "time_range \"\" is not understood: ", RANGE_HINT},
	{"soon", NULL, NULL,
	 "time_range \"soon\" is not understood: ", RANGE_HINT},
	{"-15m", NULL, NULL, "time_range \"-15m\" is not understood",
	 RANGE_HINT},
	{"+15m", NULL, NULL, "time_range \"+15m\" is not understood",
	 RANGE_HINT},
	{"15", NULL, NULL, "time_range \"15\" is not understood", RANGE_HINT},
	{"m", NULL, NULL, "time_range \"m\" is not understood", RANGE_HINT},
	{"15 parsecs", NULL, NULL, "time_range \"15 parsecs\" is not",
	 RANGE_HINT},
	{"5ms", NULL, NULL, "time_range \"5ms\" is not understood", RANGE_HINT},
	{"1h 30", NULL, NULL, "time_range \"1h 30\" is not", RANGE_HINT},
	{"1 5m", NULL, NULL, "time_range \"1 5m\" is not", RANGE_HINT},
	{"1.h", NULL, NULL, "time_range \"1.h\" is not", RANGE_HINT},
	{".5h", NULL, NULL, "time_range \".5h\" is not", RANGE_HINT},
	{"1,5h", NULL, NULL, "time_range \"1,5h\" is not", RANGE_HINT},
	{"last", NULL, NULL, "time_range \"last\" is not", RANGE_HINT},
	{"last parsec", NULL, NULL, "time_range \"last parsec\" is not",
	 RANGE_HINT},
	{"lasthour", NULL, NULL, "time_range \"lasthour\" is not", RANGE_HINT},
	{"last hour ago", NULL, NULL, "time_range \"last hour ago\" is not",
	 RANGE_HINT},
	{"next hour", NULL, NULL, "time_range \"next hour\" is not",
	 RANGE_HINT},
	{"the last hour", NULL, NULL, "time_range \"the last hour\" is not",
	 RANGE_HINT},
	{"today yesterday", NULL, NULL, "time_range \"today yesterday\" is",
	 RANGE_HINT},
	{"2026-11-21", NULL, NULL, "time_range \"2026-11-21\" is not",
	 RANGE_HINT},
	{"1\xef\xbc\x88h", NULL, NULL, "time_range \"1\xef\xbc\x88h\" is not",
	 RANGE_HINT},
	{"0m", NULL, NULL, "time_range \"0m\" is an empty range: ", RANGE_HINT},
	{"last 0 hours", NULL, NULL, "time_range \"last 0 hours\" is an empty",
	 RANGE_HINT},
	{"0.0001s", NULL, NULL, "time_range \"0.0001s\" is an empty range",
	 RANGE_HINT},
	{"401d", NULL, NULL,
	 "time_range \"401d\" is longer than the 400 days accepted: ",
	 RANGE_HINT},
	{"58w", NULL, NULL, "time_range \"58w\" is longer than", RANGE_HINT},
	{"9601h", NULL, NULL, "time_range \"9601h\" is longer than",
	 RANGE_HINT},
	{"400d 1s", NULL, NULL, "time_range \"400d 1s\" is longer than",
	 RANGE_HINT},
	{"99999999999999999999999999h", NULL, NULL,
	 "time_range \"99999999999999999999999999h\" is longer", RANGE_HINT},
	{"18446744073709551617s 1s", NULL, NULL,
	 "time_range \"18446744073709551617s 1s\" is longer", RANGE_HINT},
	{"99999999999999999999w", NULL, NULL,
	 "time_range \"99999999999999999999w\" is longer", RANGE_HINT},
	/* from */
	{NULL, "2026-02-30", NULL,
	 "from \"2026-02-30\" is not a valid date: ", TIME_HINT},
	{NULL, "2025-02-29", NULL, "from \"2025-02-29\" is not a valid date",
	 TIME_HINT},
	{NULL, "2100-02-29", NULL, "from \"2100-02-29\" is not a valid date",
	 TIME_HINT},
	{NULL, "2026-04-31", NULL, "from \"2026-04-31\" is not a valid date",
	 TIME_HINT},
	{NULL, "2026-13-01", NULL, "from \"2026-13-01\" is not a valid date",
	 TIME_HINT},
	{NULL, "2026-00-10", NULL, "from \"2026-00-10\" is not a valid date",
	 TIME_HINT},
	{NULL, "2026-11-00", NULL, "from \"2026-11-00\" is not a valid date",
	 TIME_HINT},
	{NULL, "1969-12-31T23:00:00Z", NULL,
	 "from \"1969-12-31T23:00:00Z\" has a year outside 1970..9999: ",
	 TIME_HINT},
	{NULL, "0000-01-01", NULL, "from \"0000-01-01\" has a year outside",
	 TIME_HINT},
	{NULL, "10000-01-01", NULL,
	 "from \"10000-01-01\" is not understood: ", TIME_HINT},
	{NULL, "2026-11-21T24:00Z", NULL,
	 "from \"2026-11-21T24:00Z\" is not a valid time of day: ", TIME_HINT},
	{NULL, "2026-11-21T10:60Z", NULL,
	 "from \"2026-11-21T10:60Z\" is not a valid time of day", TIME_HINT},
	{NULL, "2026-11-21T10:00:61Z", NULL,
	 "from \"2026-11-21T10:00:61Z\" is not a valid time of day", TIME_HINT},
	{NULL, "2026-11-21T10:00+24:00", NULL,
	 "from \"2026-11-21T10:00+24:00\" has a UTC offset outside "
	 "-23:59..+23:59: ",
	 TIME_HINT},
	{NULL, "2026-11-21T10:00-10:60", NULL,
	 "from \"2026-11-21T10:00-10:60\" has a UTC offset outside", TIME_HINT},
	{NULL, "2026-11-21T10", NULL,
	 "from \"2026-11-21T10\" is not understood", TIME_HINT},
	{NULL, "2026-11-21T10:00:00.", NULL,
	 "from \"2026-11-21T10:00:00.\" is not understood", TIME_HINT},
	{NULL, "2026-11-21T10:00.5Z", NULL,
	 "from \"2026-11-21T10:00.5Z\" is not understood", TIME_HINT},
	{NULL, "2026-11-21T10:00:00Zjunk", NULL,
	 "from \"2026-11-21T10:00:00Zjunk\" is not understood", TIME_HINT},
	{NULL, "2026-11-21T10:00+02:", NULL,
	 "from \"2026-11-21T10:00+02:\" is not understood", TIME_HINT},
	{NULL, "2026-11-21T10:00+2", NULL,
	 "from \"2026-11-21T10:00+2\" is not understood", TIME_HINT},
	{NULL, "2026-11-21T10:00+02:0", NULL,
	 "from \"2026-11-21T10:00+02:0\" is not understood", TIME_HINT},
	{NULL, "2026-11-21Z", NULL, "from \"2026-11-21Z\" is not understood",
	 TIME_HINT},
	{NULL, "2026-11-21T", NULL, "from \"2026-11-21T\" is not understood",
	 TIME_HINT},
	{NULL, "2026-11-21  10:00", NULL,
	 "from \"2026-11-21  10:00\" is not understood", TIME_HINT},
	{NULL, "2026-11-21_10:00", NULL,
	 "from \"2026-11-21_10:00\" is not understood", TIME_HINT},
	{NULL, "2026/11/21", NULL, "from \"2026/11/21\" is not understood",
	 TIME_HINT},
	{NULL, "21-11-2026", NULL, "from \"21-11-2026\" is not understood",
	 TIME_HINT},
	{NULL, "2026-1-21", NULL, "from \"2026-1-21\" is not understood",
	 TIME_HINT},
	{NULL, "yesterday", NULL, "from \"yesterday\" is not understood",
	 TIME_HINT},
	{NULL, "1763719200", NULL, "from \"1763719200\" is not understood",
	 TIME_HINT},
	{NULL, "now", NULL, "from \"now\" is not before now (", "ISO 8601"},
	/* to */
	{NULL, "2026-11-21", "2026-11-31",
	 "to \"2026-11-31\" is not a valid date", TIME_HINT},
	{NULL, "2026-11-21", "later",
	 "to \"later\" is not understood: ", TIME_HINT},
	{"1h", NULL, "2026-11-21T11:00:00Z",
	 "to \"2026-11-21T11:00:00Z\" is given without from: ", "ISO 8601"},
	/* order and length */
	{NULL, "2026-11-21T11:00:00Z", "2026-11-21T11:00:00Z",
	 "from \"2026-11-21T11:00:00Z\" is not before to "
	 "\"2026-11-21T11:00:00Z\": ",
	 "ISO 8601"},
	{NULL, "2026-11-21T12:00:00+02:00", "2026-11-21T10:00:00Z",
	 "from \"2026-11-21T12:00:00+02:00\" is not before to", "ISO 8601"},
	{NULL, "2026-11-22", "2026-11-21",
	 "from \"2026-11-22\" is not before to", "ISO 8601"},
	{NULL, "2024-01-01", "2025-02-04T00:00:00.001Z",
	 "from \"2024-01-01\" to \"2025-02-04T00:00:00.001Z\" spans more than "
	 "400 days: ",
	 "at most 400 days"},
	{NULL, "2020-01-01", NULL,
	 "from \"2020-01-01\" to now spans more than 400 days: ",
	 "at most 400 days"},
};

static void
test_errors(void **state)
{
	const int64_t t = now();

	(void)state;
	for (size_t i = 0; i < sizeof(err_cases) / sizeof(err_cases[0]); i++) {
		const struct err_case *c = &err_cases[i];
		struct timerange r = {-1, -1};
		char err[512] = "junk";

		if (timerange_parse(c->range, c->from, c->to, t, &r, err,
				    sizeof(err)) != STATUS_INVALID ||
		    r.from_ms != 0 || r.to_ms != 0 ||
		    strncmp(err, c->want_start, strlen(c->want_start)) != 0 ||
		    !strstr(err, c->hint))
			fail_msg("case %zu: got [%lld, %lld) \"%s\"\nwant "
				 "start: %s\nwant hint: %s",
				 i, (long long)r.from_ms, (long long)r.to_ms,
				 err, c->want_start, c->hint);
		assert_null(strchr(err, '\n'));
		assert_true(err[strlen(err) - 1] != '.');
		/* no err buffer at all is fine too */
		assert_int_equal(timerange_parse(c->range, c->from, c->to, t,
						 &r, NULL, 0),
				 STATUS_INVALID);
	}
}

/* The whole text of a few messages, as the client sees them. */
static void
test_exact_messages(void **state)
{
	const int64_t t = now();
	struct timerange r;
	char err[512];

	(void)state;
	assert_int_equal(
		timerange_parse("soon", NULL, NULL, t, &r, err, sizeof(err)),
		STATUS_INVALID);
	assert_string_equal(
		err, "time_range \"soon\" is not understood: use a duration "
		     "like \"15m\", \"1h\", \"24h\", \"7d\", a phrase like "
		     "\"last hour\", \"past 2 days\", \"today\", "
		     "\"yesterday\", \"since yesterday 3pm\", \"between "
		     "10:00 and 11:30 UTC\", \"this morning\", or from/to in "
		     "ISO 8601 (\"2026-11-21T10:00:00Z\")");

	assert_int_equal(timerange_parse(NULL, "2026-02-30", NULL, t, &r, err,
					 sizeof(err)),
			 STATUS_INVALID);
	assert_string_equal(
		err, "from \"2026-02-30\" is not a valid date: use ISO 8601 / "
		     "RFC 3339 like \"2026-11-21T10:00:00Z\", "
		     "\"2026-11-21T10:00:00.123+02:00\", \"2026-11-21 10:00\" "
		     "or \"2026-11-21\" (midnight UTC)");

	assert_int_equal(timerange_parse(NULL, "2027-01-01", NULL, t, &r, err,
					 sizeof(err)),
			 STATUS_INVALID);
	assert_string_equal(err, "from \"2027-01-01\" is not before now "
				 "(2026-11-21T10:30:15.250Z): give a from in "
				 "the past, or a to after it, in ISO 8601 "
				 "like \"2026-11-21T10:00:00Z\"");

	assert_int_equal(timerange_parse("1h", "", "2026-11-21T11:00:00Z", t,
					 &r, err, sizeof(err)),
			 STATUS_INVALID);
	assert_string_equal(err, "to \"2026-11-21T11:00:00Z\" is given without "
				 "from: give from as well (ISO 8601, e.g. "
				 "\"2026-11-21T10:00:00Z\"), or drop to and "
				 "use time_range");

	assert_int_equal(
		timerange_parse("401d", NULL, NULL, t, &r, err, sizeof(err)),
		STATUS_INVALID);
	assert_string_equal(err, "time_range \"401d\" is longer than the 400 "
				 "days accepted: " RANGE_HINT);
}

/* "today" right at UTC midnight is empty; a millisecond later it is not. */
static void
test_today_at_midnight(void **state)
{
	const int64_t midnight = utc((struct civil){2026, 11, 21});
	struct timerange r;
	char err[512];

	(void)state;
	assert_int_equal(timerange_parse("today", NULL, NULL, midnight, &r, err,
					 sizeof(err)),
			 STATUS_INVALID);
	assert_string_equal(
		err, "time_range \"today\" is an empty range: " RANGE_HINT);
	assert_int_equal(timerange_parse("today", NULL, NULL, midnight + 1, &r,
					 err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(r.from_ms, midnight);
	assert_int_equal(r.to_ms, midnight + 1);
	/* yesterday at midnight is the whole day before */
	assert_int_equal(timerange_parse("yesterday", NULL, NULL, midnight, &r,
					 err, sizeof(err)),
			 STATUS_OK);
	assert_int_equal(r.from_ms, midnight - DAY);
	assert_int_equal(r.to_ms, midnight);
	/* before 1970, days still round down */
	assert_int_equal(
		timerange_parse("today", NULL, NULL, -1, &r, err, sizeof(err)),
		STATUS_OK);
	assert_int_equal(r.from_ms, -DAY);
	assert_int_equal(r.to_ms, -1);
}

/* A clock far outside any real time is refused, not overflowed. */
static void
test_now_out_of_range(void **state)
{
	static const int64_t nows[] = {INT64_MAX, INT64_MIN,
				       (INT64_C(1) << 62) + 1};
	struct timerange r;
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(nows) / sizeof(nows[0]); i++) {
		assert_int_equal(timerange_parse("1h", NULL, NULL, nows[i], &r,
						 err, sizeof(err)),
				 STATUS_INVALID);
		assert_non_null(strstr(err, "time_range cannot be resolved"));
		assert_int_equal(r.from_ms, 0);
	}
	assert_int_equal(timerange_parse("400d", NULL, NULL,
					 -(INT64_C(1) << 62), &r, err,
					 sizeof(err)),
			 STATUS_OK);
	assert_int_equal(r.to_ms - r.from_ms, 400 * DAY);
}

/* Quoting: bounded, escaped, always valid UTF-8, even when err is cut. */
static void
test_quoting(void **state)
{
	const int64_t t = now();
	struct timerange r;
	char err[512], in[256], want[128];

	(void)state;
	assert_int_equal(
		timerange_parse("a\"b\\c", NULL, NULL, t, &r, err, sizeof(err)),
		STATUS_INVALID);
	assert_non_null(strstr(err, "time_range \"a\\\"b\\\\c\" is not"));

	/*
	 * control bytes and invalid UTF-8: lone byte, overlong (2, 3 and
	 * 4 bytes), surrogate, past U+10FFFF, truncated; valid 3 and 4 bytes
	 */
	assert_int_equal(timerange_parse("x\xff\x01y\xc0\xafz\xed\xa0\x80w"
					 "\xe0\x80\xaf.\xf0\x80\x80\xaf."
					 "\xf4\x90\x80\x80.\xe2\x82."
					 "\xe2\x82\xac\xf0\x9f\x98\x80",
					 NULL, NULL, t, &r, err, sizeof(err)),
			 STATUS_INVALID);
	assert_non_null(strstr(err,
			       "time_range \"x??y??z???w???.????.????."
			       "??.\xe2\x82\xac\xf0\x9f\x98\x80\" is not"));

	/* 40 bytes shown, then "..." */
	memset(in, 'x', 100);
	in[100] = '\0';
	assert_int_equal(
		timerange_parse(in, NULL, NULL, t, &r, err, sizeof(err)),
		STATUS_INVALID);
	snprintf(want, sizeof(want), "time_range \"%.40s...\" is not", in);
	assert_non_null(strstr(err, want));

	/* a two-byte character across the 40-byte mark is left out whole */
	memset(in, 'x', 39);
	memcpy(in + 39, "\xc3\xa9zz", 5);
	assert_int_equal(
		timerange_parse(NULL, in, NULL, t, &r, err, sizeof(err)),
		STATUS_INVALID);
	snprintf(want, sizeof(want), "from \"%.39s...\" is not", in);
	assert_non_null(strstr(err, want));

	/* cut by errlen: NUL-terminated, no half character at the end */
	assert_int_equal(timerange_parse("\xc3\xa9\xc3\xa9\xc3\xa9", NULL, NULL,
					 t, &r, err, 16),
			 STATUS_INVALID);
	assert_string_equal(err, "time_range \"\xc3\xa9");
	assert_int_equal(timerange_parse("soon", NULL, NULL, t, &r, err, 8),
			 STATUS_INVALID);
	assert_string_equal(err, "time_ra");
	err[0] = 'q';
	assert_int_equal(timerange_parse("soon", NULL, NULL, t, &r, err, 1),
			 STATUS_INVALID);
	assert_string_equal(err, "");

	/* longer than the input bound: refused, quoted bounded */
	memset(in, ' ', sizeof(in));
	in[0] = '1';
	memset(in + 1, '0', 200);
	in[201] = 'h';
	in[202] = '\0';
	assert_int_equal(
		timerange_parse(in, NULL, NULL, t, &r, err, sizeof(err)),
		STATUS_INVALID);
	assert_non_null(strstr(err, "0...\" is not understood"));
}

/* ---- formatting -------------------------------------------------------- */

struct fmt_case {
	struct civil c;
	int64_t plus_ms; /* added to c; lets a row go below 1970 */
	const char *want;
};

static const struct fmt_case fmt_cases[] = {
	{{2026, 11, 21, 10}, 0, "2026-11-21T10:00:00Z"},
	{{2026, 11, 21, 10, 0, 0, 123}, 0, "2026-11-21T10:00:00.123Z"},
	{{2026, 11, 21, 10, 0, 0, 1}, 0, "2026-11-21T10:00:00.001Z"},
	{{2026, 11, 21, 10, 0, 0, 500}, 0, "2026-11-21T10:00:00.500Z"},
	{{1970, 1, 1}, 0, "1970-01-01T00:00:00Z"},
	{{1970, 1, 1}, -1, "1969-12-31T23:59:59.999Z"},
	{{1970, 1, 1}, -DAY, "1969-12-31T00:00:00Z"},
	{{2000, 2, 29, 23, 59, 59, 999}, 0, "2000-02-29T23:59:59.999Z"},
	{{2100, 3, 1}, 0, "2100-03-01T00:00:00Z"},
	{{2024, 12, 31, 12}, 0, "2024-12-31T12:00:00Z"},
	{{9999, 12, 31, 23, 59, 59, 999}, 0, "9999-12-31T23:59:59.999Z"},
	{{1600, 3, 1}, 0, "1600-03-01T00:00:00Z"},
};

static void
test_format(void **state)
{
	char buf[TIMERANGE_FORMAT_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(fmt_cases) / sizeof(fmt_cases[0]); i++) {
		const struct fmt_case *c = &fmt_cases[i];
		int64_t ms = utc(c->c) + c->plus_ms;

		assert_int_equal(timerange_format(ms, buf, sizeof(buf)),
				 strlen(c->want));
		assert_string_equal(buf, c->want);
	}
	/* like snprintf: the full length, a cut NUL-terminated prefix */
	assert_int_equal(timerange_format(0, NULL, 0), 20);
	assert_int_equal(timerange_format(0, buf, 5), 20);
	assert_string_equal(buf, "1970");
	/* the extremes fit TIMERANGE_FORMAT_MAX */
	assert_true(timerange_format(INT64_MAX, buf, sizeof(buf)) <
		    TIMERANGE_FORMAT_MAX);
	assert_string_equal(buf, "292278994-08-17T07:12:55.807Z");
	assert_true(timerange_format(INT64_MIN, buf, sizeof(buf)) <
		    TIMERANGE_FORMAT_MAX);
	assert_string_equal(buf, "-292275055-05-16T16:47:04.192Z");
}

/*
 * Every day from 1970 to 2500, then every 13th to 9999, at a varying time
 * of day: the text matches gmtime_r's and parses back to the same
 * millisecond.  (Every day to 9999 takes seconds under ASan.)
 */
static void
test_round_trip(void **state)
{
	const int64_t end = utc((struct civil){10000, 1, 1});
	const int64_t dense = utc((struct civil){2500, 1, 1});
	char got[TIMERANGE_FORMAT_MAX], want[64], next[TIMERANGE_FORMAT_MAX];
	struct timerange r;
	char err[512];

	(void)state;
	for (int64_t day = 0; day * DAY < end;
	     day += day * DAY < dense ? 1 : 13) {
		int64_t ms = day * DAY + (day * 7919 * SEC + day % 1000) % DAY;
		time_t secs = (time_t)(ms / SEC);
		struct tm tm;

		assert_non_null(gmtime_r(&secs, &tm));
		if (ms % SEC)
			snprintf(want, sizeof(want),
				 "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
				 tm.tm_hour, tm.tm_min, tm.tm_sec,
				 (int)(ms % SEC));
		else
			snprintf(want, sizeof(want),
				 "%04d-%02d-%02dT%02d:%02d:%02dZ",
				 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
				 tm.tm_hour, tm.tm_min, tm.tm_sec);
		timerange_format(ms, got, sizeof(got));
		if (strcmp(got, want) != 0)
			fail_msg("ms %lld: got %s want %s", (long long)ms, got,
				 want);
		timerange_format(ms + 1, next, sizeof(next));
		if (timerange_parse(NULL, got, next, 0, &r, err, sizeof(err)) !=
			    STATUS_OK ||
		    r.from_ms != ms || r.to_ms != ms + 1)
			fail_msg("%s .. %s: %s", got, next, err);
	}
}

/* ---- describe ---------------------------------------------------------- */

struct desc_case {
	int64_t back_ms;  /* from = to - back_ms */
	int64_t ahead_ms; /* to = now - ahead_ms */
	const char *want;
};

static const struct desc_case desc_cases[] = {
	{HOUR, 0, "last 1h"},
	{15 * MIN, 0, "last 15m"},
	{2 * DAY, 0, "last 2d"},
	{7 * DAY, 0, "last 7d"},
	{14 * DAY, 0, "last 14d"},
	{90 * MIN, 0, "last 90m"},
	{36 * HOUR, 0, "last 36h"},
	{30 * SEC, 0, "last 30s"},
	{HOUR + SEC, 0, "last 3601s"},
	{1500, 0, "2026-11-21T10:30:13.750Z .. 2026-11-21T10:30:15.250Z"},
	{HOUR, 250, "2026-11-21T09:30:15Z .. 2026-11-21T10:30:15Z"},
	{0, 0, "2026-11-21T10:30:15.250Z .. 2026-11-21T10:30:15.250Z"},
	{-HOUR, 0, "2026-11-21T11:30:15.250Z .. 2026-11-21T10:30:15.250Z"},
};

static void
test_describe(void **state)
{
	const int64_t t = now();
	char buf[TIMERANGE_DESCRIBE_MAX];

	(void)state;
	for (size_t i = 0; i < sizeof(desc_cases) / sizeof(desc_cases[0]);
	     i++) {
		const struct desc_case *c = &desc_cases[i];
		struct timerange r;

		r.to_ms = t - c->ahead_ms;
		r.from_ms = r.to_ms - c->back_ms;
		assert_int_equal(timerange_describe(&r, t, buf, sizeof(buf)),
				 strlen(c->want));
		assert_string_equal(buf, c->want);
	}
}

static void
test_describe_parsed_and_bounds(void **state)
{
	const int64_t t = now();
	struct timerange r = {INT64_MIN, INT64_MAX};
	char buf[TIMERANGE_DESCRIBE_MAX];

	(void)state;
	assert_true(timerange_describe(&r, INT64_MAX, buf, sizeof(buf)) <
		    sizeof(buf));
	assert_string_equal(buf, "-292275055-05-16T16:47:04.192Z .. "
				 "292278994-08-17T07:12:55.807Z");
	r.from_ms = INT64_MAX - 1000;
	assert_int_equal(timerange_describe(&r, INT64_MAX, buf, sizeof(buf)),
			 strlen("last 1s"));
	assert_string_equal(buf, "last 1s");
	/* like snprintf when cut */
	assert_int_equal(timerange_describe(&r, INT64_MAX, buf, 6), 7);
	assert_string_equal(buf, "last ");
	assert_int_equal(timerange_describe(&r, INT64_MAX, NULL, 0), 7);

	assert_int_equal(
		timerange_parse("last 24 hours", NULL, NULL, t, &r, NULL, 0),
		STATUS_OK);
	timerange_describe(&r, t, buf, sizeof(buf));
	assert_string_equal(buf, "last 1d");
	assert_int_equal(
		timerange_parse("yesterday", NULL, NULL, t, &r, NULL, 0),
		STATUS_OK);
	timerange_describe(&r, t, buf, sizeof(buf));
	assert_string_equal(buf,
			    "2026-11-20T00:00:00Z .. 2026-11-21T00:00:00Z");
	assert_int_equal(timerange_parse(NULL, "2026-11-21T09:30:15.250Z", NULL,
					 t, &r, NULL, 0),
			 STATUS_OK);
	timerange_describe(&r, t, buf, sizeof(buf));
	assert_string_equal(buf, "last 1h");
}

/* an ISO time before now() as Unix ms, through timerange_parse's from */
static int64_t
iso_ms(const char *iso)
{
	struct timerange r;

	assert_int_equal(timerange_parse(NULL, iso, NULL, now(), &r, NULL, 0),
			 STATUS_OK);
	return r.from_ms;
}

/* people's time phrases, at 2026-11-21T10:30:15.250Z */
static void
test_phrases(void **state)
{
	const struct {
		const char *in;
		const char *from, *to; /* NULL to: now; NULL from: refused */
	} cases[] = {
		{"since yesterday 3pm", "2026-11-20T15:00:00Z", NULL},
		{"Since Yesterday at 15:00 UTC", "2026-11-20T15:00:00Z", NULL},
		{"since 10:00", "2026-11-21T10:00:00Z", NULL},
		{"since 9:05:30am", "2026-11-21T09:05:30Z", NULL},
		{"since today", "2026-11-21T00:00:00Z", NULL},
		{"since 2026-11-19 noon", "2026-11-19T12:00:00Z", NULL},
		{"between 10:00 and 10:15 UTC", "2026-11-21T10:00:00Z",
		 "2026-11-21T10:15:00Z"},
		{"from yesterday 9am to yesterday 5 pm", "2026-11-20T09:00:00Z",
		 "2026-11-20T17:00:00Z"},
		{"between 2026-11-19 and 2026-11-20", "2026-11-19T00:00:00Z",
		 "2026-11-20T00:00:00Z"},
		{"between yesterday midnight and now", "2026-11-20T00:00:00Z",
		 NULL},
		{"this morning", "2026-11-21T06:00:00Z", NULL},
		{"last 90 minutes", "2026-11-21T09:00:15.250Z", NULL},
		{"this afternoon", NULL, NULL}, /* not yet: empty */
		{"since 3", NULL, NULL},	/* a bare number */
		{"since 25:00", NULL, NULL},
		{"since 13pm", NULL, NULL},
		{"between 11:00 and 10:00", NULL, NULL},
		{"between 10:00", NULL, NULL},
		{"since yesterday 3pm please", NULL, NULL},
		{"this week", NULL, NULL},
	};
	char err[512];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct timerange r;
		int rc = timerange_parse(cases[i].in, NULL, NULL, now(), &r,
					 err, sizeof(err));

		if (cases[i].from == NULL) {
			if (rc != STATUS_INVALID ||
			    strstr(err, "time_range \"") != err)
				fail_msg("\"%s\": rc %d [%lld, %lld) %s",
					 cases[i].in, rc, (long long)r.from_ms,
					 (long long)r.to_ms, err);
			continue;
		}
		if (rc != STATUS_OK || r.from_ms != iso_ms(cases[i].from) ||
		    r.to_ms != (cases[i].to ? iso_ms(cases[i].to) : now()))
			fail_msg("\"%s\": rc %d [%lld, %lld) %s", cases[i].in,
				 rc, (long long)r.from_ms, (long long)r.to_ms,
				 err);
	}
}

/* compare_to: the range before, or shifted back by a duration */
static void
test_baseline(void **state)
{
	const struct timerange r = {1000LL * 3600 * 24 * 400,
				    1000LL * 3600 * 24 * 400 + 3600000};
	const struct {
		const char *in;
		int64_t shift_ms; /* 0: refused */
	} cases[] = {
		{"previous", 3600000},
		{"  PREV ", 3600000},
		{"before", 3600000},
		{"1d", 86400000},
		{"-1d", 86400000},
		{"1 day ago", 86400000},
		{"7d", 7 * 86400000LL},
		{"1 week", 7 * 86400000LL},
		{"30m", 1800000},
		{"1h30m", 5400000},
		{"", 0},
		{NULL, 0},
		{"yesterday", 0},
		{"0h", 0},
		{"-", 0},
		{"ago", 0},
		{"1 fortnight", 0},
		{"401d", 0},
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct timerange b = {1, 2};
		int rc = timerange_baseline(&r, cases[i].in, &b, err,
					    sizeof(err));

		if (cases[i].shift_ms == 0) {
			if (rc != STATUS_INVALID || b.from_ms != 0 ||
			    b.to_ms != 0 ||
			    strstr(err, "compare_to \"") != err ||
			    strstr(err, "\"previous\"") == NULL)
				fail_msg("case %zu (%s): rc %d, err \"%s\"", i,
					 cases[i].in ? cases[i].in : "NULL", rc,
					 err);
			continue;
		}
		if (rc != STATUS_OK || err[0] != '\0' ||
		    b.from_ms != r.from_ms - cases[i].shift_ms ||
		    b.to_ms != r.to_ms - cases[i].shift_ms)
			fail_msg("case %zu (%s): rc %d, [%lld, %lld), err "
				 "\"%s\"",
				 i, cases[i].in, rc, (long long)b.from_ms,
				 (long long)b.to_ms, err);
	}
	/* the quoted value is bounded and the message says what to do */
	assert_int_equal(timerange_baseline(&r, "soon", &(struct timerange){0},
					    err, sizeof(err)),
			 STATUS_INVALID);
	assert_string_equal(
		err, "compare_to \"soon\" is not understood: use \"previous\" "
		     "(the same length just before the range) or a shift back "
		     "like \"1h\", \"1d\", \"7d\" (at most 400 days)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_relative),
		cmocka_unit_test(test_absolute),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_exact_messages),
		cmocka_unit_test(test_today_at_midnight),
		cmocka_unit_test(test_now_out_of_range),
		cmocka_unit_test(test_quoting),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_describe),
		cmocka_unit_test(test_describe_parsed_and_bounds),
		cmocka_unit_test(test_baseline),
		cmocka_unit_test(test_phrases),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
