/*
 * timerange.h - resolves a tool's time_range / from / to arguments ("1h",
 * "last 30 minutes", "yesterday", ISO 8601) into a half-open interval of
 * Unix milliseconds, and prints intervals back for answers.
 * Pure computation: no allocation, no locale, no time zone database, no
 * global state; every function is thread-safe.
 */
#ifndef SEXTANT_TIMERANGE_H
#define SEXTANT_TIMERANGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/* [from_ms, to_ms): Unix milliseconds, from_ms < to_ms */
struct timerange {
	int64_t from_ms;
	int64_t to_ms;
};
#define TIMERANGE_MAX_MS (400LL * 24 * 3600 * 1000) /* longest range accepted */
/*
 * Resolves a tool's time arguments against now_ms.  range (may be NULL or
 * "" when from/to are given): relative forms "15m", "1h", "24h", "7d", "30s",
 * "2w", with optional spaces and unit words ("30 min", "2 hours",
 * "90 minutes", "1 day", "3 weeks"), phrases "last hour", "last 30 minutes",
 * "past 2 days", "past day", "last week", "last 24h", "today" (UTC midnight
 * to now), "yesterday" (previous UTC day, midnight to midnight); case-
 * insensitive, surrounding whitespace ignored.  from / to (may be NULL):
 * ISO 8601 / RFC 3339 ("2026-11-21T10:00:00Z", "2026-11-21T10:00:00.123+02:00",
 * "2026-11-21 10:00", "2026-11-21" = midnight UTC); when from is given, to
 * defaults to now_ms; from/to win over range; to without from is an error.
 * STATUS_INVALID when nothing parses, a range is 0 or above TIMERANGE_MAX_MS,
 * or from >= to: err gets a one-line message naming the field ("time_range",
 * "from" or "to"), quoting (a bounded prefix of) the bad value, and listing
 * what is accepted, e.g.: time_range "soon" is not understood: use a
 * duration like "15m", "1h", "24h", "7d", a phrase like "last hour",
 * "past 2 days", "today", "yesterday", or from/to in ISO 8601
 * ("2026-11-21T10:00:00Z")
 *
 * Details of the accepted forms:
 * - durations are one or more number-unit groups ("1h30m", "1 hour 30 min");
 *   a number may have a decimal fraction ("1.5h"); units are s sec secs
 *   second seconds, m min mins minute minutes, h hr hrs hour hours, d day
 *   days, w wk wks week weeks; "last" / "past" may precede a duration or a
 *   bare unit ("last hour" = "1h").  Sub-millisecond fractions are dropped.
 * - from / to: YYYY-MM-DD, optionally followed by 'T', 't' or a space and
 *   HH:MM[:SS[.fraction]] and a zone: Z, +HH:MM, +HHMM or +HH (or '-');
 *   no zone means UTC; seconds may be 60 (a leap second, counted as the
 *   next second's start); digits past milliseconds are dropped; "now" is
 *   now_ms.  Years 1970..9999 as written, offsets up to 23:59.
 *   A range spanning more than TIMERANGE_MAX_MS is refused as well.
 * - empty or all-whitespace strings count as absent.  "today" right at UTC
 *   midnight is an empty range and refused.
 * - the quoted value in err is at most 40 bytes of it (then "..."), control
 *   bytes and invalid UTF-8 shown as '?', so err is always valid UTF-8
 *   (also when cut to errlen).
 * out must not be NULL; it is {0, 0} on failure.  err may be NULL (or
 * errlen 0); it is set to "" on success.
 */
int timerange_parse(const char *range, const char *from, const char *to,
		    int64_t now_ms, struct timerange *out, char *err,
		    size_t errlen) WUR;
/*
 * The baseline a range is compared with (a tool's compare_to argument):
 * "previous" (or "prev", "before": the same length just before the range)
 * or a shift back by a duration in time_range's duration forms ("1h", "1d",
 * "7d", "1 week"), e.g. "1d" compares 10:00-11:00 today with 10:00-11:00
 * yesterday.  Case-insensitive, surrounding whitespace ignored; a leading
 * "-" or "ago" after the duration is accepted ("-1d", "1 day ago").
 * STATUS_INVALID when it is none of these, or the shift is 0 or above
 * TIMERANGE_MAX_MS: err names compare_to, quotes the value and lists what is
 * accepted.  *out is {0, 0} on failure.
 */
int timerange_baseline(const struct timerange *r, const char *compare_to,
		       struct timerange *out, char *err, size_t errlen) WUR;
/* ms as RFC 3339 UTC, "2026-11-21T10:00:00Z", or with ".123" when ms is
 * not a whole second.  Returns the length like snprintf. */
size_t timerange_format(int64_t ms, char *buf, size_t cap);
/* A short human form of the range for answers: "last 1h", "last 15m",
 * "last 2d", or "2026-11-21T10:00:00Z .. 2026-11-21T11:00:00Z" for
 * absolute or non-trailing ranges (to != now).  Returns length like snprintf. */
size_t timerange_describe(const struct timerange *r, int64_t now_ms, char *buf,
			  size_t cap);

/*
 * Both formatting functions accept any int64 value (years outside 0..9999
 * print with more digits or a sign), write at most cap bytes including the
 * NUL (buf may be NULL when cap is 0), and return the length the whole text
 * has.  TIMERANGE_FORMAT_MAX holds any timerange_format output with its NUL,
 * TIMERANGE_DESCRIBE_MAX any timerange_describe output.  describe uses the
 * largest of d, h, m, s that divides the length exactly, and the absolute
 * form when none does or the range is empty.
 */
#define TIMERANGE_FORMAT_MAX   40
#define TIMERANGE_DESCRIBE_MAX (2 * TIMERANGE_FORMAT_MAX + 4)

#endif
