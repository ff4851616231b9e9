/*
 * timerange.c - time_range / from / to arguments to [from, to) in Unix ms.
 *
 * Calendar arithmetic is days-from-civil on the proleptic Gregorian calendar
 * (H. Hinnant, "chrono-Compatible Low-Level Date Algorithms"), so nothing
 * depends on timegm, TZ or the locale; letters are folded by hand (ASCII).
 */
#include "base/timerange.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/utf8.h"

#define MS_PER_S    INT64_C(1000)
#define MS_PER_MIN  (60 * MS_PER_S)
#define MS_PER_H    (60 * MS_PER_MIN)
#define MS_PER_DAY  (24 * MS_PER_H)
#define MS_PER_WEEK (7 * MS_PER_DAY)

/* No time anyone means is longer; the bound keeps digit runs short. */
#define INPUT_MAX 128
/* How much of a bad value an error quotes: enough to recognise it. */
#define QUOTE_MAX 40
/* Each quoted byte takes at most two (\"), then "..." and the NUL. */
#define QUOTE_CAP (2 * QUOTE_MAX + 4)
/* |now_ms| bound: now - TIMERANGE_MAX_MS and day rounding cannot overflow. */
#define NOW_LIMIT (INT64_C(1) << 62)
/* Fraction digits kept: more would overflow digits * unit. */
#define FRAC_DIGITS 9

static const char range_hint[] =
	"use a duration like \"15m\", \"1h\", \"24h\", \"7d\", a phrase like "
	"\"last hour\", \"past 2 days\", \"today\", \"yesterday\", \"since "
	"yesterday 3pm\", \"between 10:00 and 11:30 UTC\", \"this morning\", "
	"or from/to in ISO 8601 (\"2026-11-21T10:00:00Z\")";
static const char time_hint[] =
	"use ISO 8601 / RFC 3339 like \"2026-11-21T10:00:00Z\", "
	"\"2026-11-21T10:00:00.123+02:00\", \"2026-11-21 10:00\" or "
	"\"2026-11-21\" (midnight UTC)";

/* ---- small helpers ----------------------------------------------------- */

static bool
is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

static bool
is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char
lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool
is_alpha(char c)
{
	c = lower(c);
	return c >= 'a' && c <= 'z';
}

/* *s[0..*n) without surrounding whitespace. */
static void
trim_span(const char **s, size_t *n)
{
	while (*n > 0 && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n > 0 && is_space((*s)[*n - 1]))
		(*n)--;
}

/* s[0..n) without surrounding whitespace; NULL counts as empty. */
static void
trim(const char *s, const char **start, size_t *len)
{
	size_t n = s ? strlen(s) : 0;

	trim_span(&s, &n);
	*start = s;
	*len = n;
}

/* s[0..n) equals the lowercase word w, ignoring case. */
static bool
word_eq(const char *s, size_t n, const char *w)
{
	size_t i;

	for (i = 0; i < n && w[i]; i++)
		if (lower(s[i]) != w[i])
			return false;
	return i == n && w[i] == '\0';
}

/* floor(a / b) and the matching non-negative remainder, for b > 0. */
static int64_t
floor_div(int64_t a, int64_t b, int64_t *rem)
{
	int64_t q = a / b, r = a % b;

	if (r < 0) {
		r += b;
		q--;
	}
	if (rem)
		*rem = r;
	return q;
}

/* Days since 1970-01-01 of y-m-d (m 1..12, d 1..31), any year. */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* Inverse of days_from_civil, for |z| up to about 2^40. */
static void
civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (int)(doy - (153 * mp + 2) / 5 + 1);
	*m = (int)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int
days_in_month(int64_t y, int m)
{
	static const int mdays[12] = {31, 28, 31, 30, 31, 30,
				      31, 31, 30, 31, 30, 31};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : mdays[m - 1];
}

/* ---- error messages ---------------------------------------------------- */

/*
 * The first QUOTE_MAX bytes of s[0..n) for quoting in a message, into q
 * (QUOTE_CAP bytes): '"' and '\' escaped, control bytes and invalid UTF-8
 * as '?', "..." when cut, so the message stays one valid UTF-8 line.
 */
static void
quote(char *q, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, o = 0, len;

	while (i < n && i < QUOTE_MAX) {
		if (u[i] == '"' || u[i] == '\\') {
			q[o++] = '\\';
			q[o++] = (char)u[i++];
		} else if (u[i] >= 0x20 && u[i] < 0x7f) {
			q[o++] = (char)u[i++];
		} else if (u[i] >= 0x80 && (len = utf8_len(u + i, n - i)) > 0) {
			if (i + len > QUOTE_MAX)
				break;
			memcpy(q + o, u + i, len);
			o += len;
			i += len;
		} else {
			q[o++] = '?';
			i++;
		}
	}
	if (i < n) {
		memcpy(q + o, "...", 3);
		o += 3;
	}
	q[o] = '\0';
}

/* Cuts a trailing incomplete UTF-8 sequence off s[0..n). */
static void
cut_utf8_tail(char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t j = n, need;

	while (j > 0 && (u[j - 1] & 0xc0) == 0x80)
		j--;
	if (j == 0 || u[j - 1] < 0xc0)
		return;
	j--;
	need = u[j] >= 0xf0 ? 4 : u[j] >= 0xe0 ? 3 : 2;
	if (j + need > n)
		s[j] = '\0';
}

PRINTF_LIKE(3, 4)
static void
set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || errlen == 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	if (n < 0)
		err[0] = '\0';
	else if ((size_t)n >= errlen)
		cut_utf8_tail(err, errlen - 1);
}

/* ---- time_range -------------------------------------------------------- */

enum range_fail {
	RANGE_OK = 0,
	RANGE_SYNTAX,
	RANGE_ZERO,
	RANGE_TOO_LONG,
};

struct unit {
	const char *name;
	int64_t ms;
};

static const struct unit units[] = {
	{"s", MS_PER_S},	 {"sec", MS_PER_S},	 {"secs", MS_PER_S},
	{"second", MS_PER_S},	 {"seconds", MS_PER_S},	 {"m", MS_PER_MIN},
	{"min", MS_PER_MIN},	 {"mins", MS_PER_MIN},	 {"minute", MS_PER_MIN},
	{"minutes", MS_PER_MIN}, {"h", MS_PER_H},	 {"hr", MS_PER_H},
	{"hrs", MS_PER_H},	 {"hour", MS_PER_H},	 {"hours", MS_PER_H},
	{"d", MS_PER_DAY},	 {"day", MS_PER_DAY},	 {"days", MS_PER_DAY},
	{"w", MS_PER_WEEK},	 {"wk", MS_PER_WEEK},	 {"wks", MS_PER_WEEK},
	{"week", MS_PER_WEEK},	 {"weeks", MS_PER_WEEK},
};

/* Milliseconds of the unit word s[0..n), 0 when it is none. */
static int64_t
unit_ms(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (word_eq(s, n, units[i].name))
			return units[i].ms;
	return 0;
}

/*
 * One or more "<number>[.<fraction>] <unit>" groups, spaces optional
 * between and inside them: "15m", "2 hours", "1h30m", "1.5 h".  Digits are
 * accumulated by hand because strtoll would also take signs and leading
 * space; values past TIMERANGE_MAX_MS saturate, so no digit run overflows.
 */
static enum range_fail
parse_duration(const char *s, size_t n, int64_t *ms)
{
	const int64_t cap = TIMERANGE_MAX_MS;
	int64_t total = 0;
	bool too_long = false;
	size_t i = 0;

	if (n == 0)
		return RANGE_SYNTAX;
	while (i < n) {
		int64_t whole = 0, frac = 0, scale = 1, u;
		size_t w;

		if (!is_digit(s[i]))
			return RANGE_SYNTAX;
		for (; i < n && is_digit(s[i]); i++)
			if (whole <= cap)
				whole = whole * 10 + (s[i] - '0');
		if (i < n && s[i] == '.') {
			if (++i >= n || !is_digit(s[i]))
				return RANGE_SYNTAX;
			for (int k = 0; i < n && is_digit(s[i]); i++, k++) {
				if (k < FRAC_DIGITS) {
					frac = frac * 10 + (s[i] - '0');
					scale *= 10;
				}
			}
		}
		while (i < n && is_space(s[i]))
			i++;
		for (w = i; i < n && is_alpha(s[i]); i++)
			;
		if ((u = unit_ms(s + w, i - w)) == 0)
			return RANGE_SYNTAX;
		while (i < n && is_space(s[i]))
			i++;
		/* frac < 10^9 and u <= 6.048e8 ms: the product fits */
		if (too_long || whole > cap / u)
			too_long = true;
		else if ((total += whole * u + frac * u / scale) > cap)
			too_long = true;
	}
	if (too_long)
		return RANGE_TOO_LONG;
	if (total == 0)
		return RANGE_ZERO;
	*ms = total;
	return RANGE_OK;
}

static enum range_fail parse_phrase(const char *s, size_t n, int64_t now,
				    struct timerange *r);

/* s[0..n) is trimmed and non-empty; |now| <= NOW_LIMIT. */
static enum range_fail
parse_range(const char *s, size_t n, int64_t now, struct timerange *r)
{
	int64_t midnight = floor_div(now, MS_PER_DAY, NULL) * MS_PER_DAY;
	int64_t ms = 0;
	enum range_fail rc;

	if ((rc = parse_phrase(s, n, now, r)) != RANGE_SYNTAX)
		return rc;
	if (word_eq(s, n, "today")) {
		r->from_ms = midnight;
		r->to_ms = now;
		return midnight < now ? RANGE_OK : RANGE_ZERO;
	}
	if (word_eq(s, n, "yesterday")) {
		r->from_ms = midnight - MS_PER_DAY;
		r->to_ms = midnight;
		return RANGE_OK;
	}
	if (n > 4 && (word_eq(s, 4, "last") || word_eq(s, 4, "past")) &&
	    is_space(s[4])) {
		size_t i = 5, w;

		while (i < n && is_space(s[i]))
			i++;
		for (w = i; w < n && is_alpha(s[w]); w++)
			;
		if (w == n && w > i) {
			/* "last hour": a bare unit is one of it */
			if ((ms = unit_ms(s + i, n - i)) == 0)
				return RANGE_SYNTAX;
		} else if ((rc = parse_duration(s + i, n - i, &ms)) !=
			   RANGE_OK) {
			return rc;
		}
	} else if ((rc = parse_duration(s, n, &ms)) != RANGE_OK) {
		return rc;
	}
	r->from_ms = now - ms;
	r->to_ms = now;
	return RANGE_OK;
}

/* ---- from / to --------------------------------------------------------- */

enum time_fail {
	TIME_OK = 0,
	TIME_SYNTAX,
	TIME_YEAR,
	TIME_DATE,
	TIME_CLOCK,
	TIME_OFFSET,
};

/* Exactly k digits at s[*i..n) into *v; advances *i. */
static bool
digits(const char *s, size_t n, size_t *i, int k, int *v)
{
	int x = 0;

	if (*i + (size_t)k > n)
		return false;
	for (int j = 0; j < k; j++) {
		if (!is_digit(s[*i + (size_t)j]))
			return false;
		x = x * 10 + (s[*i + (size_t)j] - '0');
	}
	*i += (size_t)k;
	*v = x;
	return true;
}

/*
 * RFC 3339 section 5.6 date-time, with the ISO 8601 relaxations agents
 * send: a space for 'T', no seconds, no zone (UTC), date alone, "+HHMM" and
 * "+HH" offsets, ',' before the fraction.  s[0..n) is trimmed.
 */
static enum time_fail
parse_time(const char *s, size_t n, int64_t now, int64_t *ms)
{
	int y, mo, d, h = 0, mi = 0, sec = 0, oh = 0, om = 0, sign = 0;
	int64_t frac_ms = 0;
	size_t i = 0;

	if (word_eq(s, n, "now")) {
		*ms = now;
		return TIME_OK;
	}
	if (!digits(s, n, &i, 4, &y) || i >= n || s[i++] != '-' ||
	    !digits(s, n, &i, 2, &mo) || i >= n || s[i++] != '-' ||
	    !digits(s, n, &i, 2, &d))
		return TIME_SYNTAX;
	if (i < n) {
		if (s[i] != 'T' && s[i] != 't' && s[i] != ' ')
			return TIME_SYNTAX;
		i++;
		if (!digits(s, n, &i, 2, &h) || i >= n || s[i++] != ':' ||
		    !digits(s, n, &i, 2, &mi))
			return TIME_SYNTAX;
		if (i < n && s[i] == ':') {
			i++;
			if (!digits(s, n, &i, 2, &sec))
				return TIME_SYNTAX;
			if (i < n && (s[i] == '.' || s[i] == ',')) {
				int k = 0;

				if (++i >= n || !is_digit(s[i]))
					return TIME_SYNTAX;
				for (; i < n && is_digit(s[i]); i++, k++)
					if (k < 3)
						frac_ms = frac_ms * 10 +
							  (s[i] - '0');
				for (; k < 3; k++)
					frac_ms *= 10;
			}
		}
		if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
			i++;
		} else if (i < n && (s[i] == '+' || s[i] == '-')) {
			sign = s[i++] == '-' ? -1 : 1;
			if (!digits(s, n, &i, 2, &oh))
				return TIME_SYNTAX;
			/* "+02:00", "+0200" or "+02" */
			if (i < n && s[i] == ':' && ++i == n)
				return TIME_SYNTAX;
			if (i < n && !digits(s, n, &i, 2, &om))
				return TIME_SYNTAX;
		}
		if (i != n)
			return TIME_SYNTAX;
	}
	if (y < 1970 || y > 9999)
		return TIME_YEAR;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo))
		return TIME_DATE;
	if (h > 23 || mi > 59 || sec > 60)
		return TIME_CLOCK;
	if (oh > 23 || om > 59)
		return TIME_OFFSET;
	*ms = days_from_civil(y, mo, d) * MS_PER_DAY + h * MS_PER_H +
	      mi * MS_PER_MIN + sec * MS_PER_S + frac_ms -
	      sign * (oh * MS_PER_H + om * MS_PER_MIN);
	return TIME_OK;
}

static void
time_err(char *err, size_t errlen, const char *field, const char *s, size_t n,
	 enum time_fail why)
{
	char q[QUOTE_CAP];
	const char *what = "is not understood";

	switch (why) {
	case TIME_YEAR: what = "has a year outside 1970..9999"; break;
	case TIME_DATE: what = "is not a valid date"; break;
	case TIME_CLOCK: what = "is not a valid time of day"; break;
	case TIME_OFFSET:
		what = "has a UTC offset outside -23:59..+23:59";
		break;
	case TIME_OK:
	case TIME_SYNTAX: break;
	}
	quote(q, s, n);
	set_err(err, errlen, "%s \"%s\" %s: %s", field, q, what, time_hint);
}

/* ---- phrases: "since yesterday 3pm", "between 10:00 and 11:30 UTC" ----- */

/* s[*i..n) past spaces */
static void
skip_spaces(const char *s, size_t n, size_t *i)
{
	while (*i < n && is_space(s[*i]))
		(*i)++;
}

/* The word w (lowercase) at s[*i..n), followed by a space or the end:
 * consumed. */
static bool
take_word(const char *s, size_t n, size_t *i, const char *w)
{
	size_t k = strlen(w);

	if (*i + k > n || !word_eq(s + *i, k, w) ||
	    (*i + k < n && !is_space(s[*i + k])))
		return false;
	*i += k;
	skip_spaces(s, n, i);
	return true;
}

/*
 * A time of day at s[*i..n) into *ms (since midnight): "15:00",
 * "15:00:30", "3pm", "3 pm", "3:30pm", "12am", "noon", "midnight".
 */
static bool
take_clock(const char *s, size_t n, size_t *i, int64_t *ms)
{
	size_t j = *i;
	int h = 0, m = 0, sec = 0, nd = 0;

	if (take_word(s, n, i, "noon")) {
		*ms = 12 * MS_PER_H;
		return true;
	}
	if (take_word(s, n, i, "midnight")) {
		*ms = 0;
		return true;
	}
	while (j < n && is_digit(s[j]) && nd < 2) {
		h = h * 10 + (s[j++] - '0');
		nd++;
	}
	if (nd == 0)
		return false;
	if (j < n && s[j] == ':') {
		j++;
		if (!digits(s, n, &j, 2, &m) || m > 59)
			return false;
		if (j < n && s[j] == ':' &&
		    (j++, !digits(s, n, &j, 2, &sec) || sec > 59))
			return false;
	}
	while (j < n && is_space(s[j]))
		j++;
	if (j + 2 <= n &&
	    (word_eq(s + j, 2, "am") || word_eq(s + j, 2, "pm")) &&
	    (j + 2 == n || is_space(s[j + 2]))) {
		if (h < 1 || h > 12)
			return false;
		h = h % 12 + (lower(s[j]) == 'p' ? 12 : 0);
		j += 2;
	} else if (nd == 1 && j == *i + 1) {
		return false; /* a bare number is no time of day */
	} else if (h > 23) {
		return false;
	}
	*i = j;
	skip_spaces(s, n, i);
	*ms = h * MS_PER_H + m * MS_PER_MIN + sec * MS_PER_S;
	return true;
}

/*
 * A point in time at s[*i..n): [today | yesterday | YYYY-MM-DD] [at] a
 * time of day ("yesterday 3pm", "10:00", "2026-11-27 at 09:30"), a day
 * alone (its midnight), or "now"; then an optional "UTC" (times are UTC).
 */
static bool
take_point(const char *s, size_t n, size_t *i, int64_t now, int64_t *ms)
{
	int64_t midnight = floor_div(now, MS_PER_DAY, NULL) * MS_PER_DAY;
	int64_t day = midnight, clock = 0;
	bool has_day = false;
	size_t j = *i;

	if (take_word(s, n, i, "now")) {
		*ms = now;
		goto zone;
	}
	if (take_word(s, n, i, "today")) {
		has_day = true;
	} else if (take_word(s, n, i, "yesterday")) {
		day = midnight - MS_PER_DAY;
		has_day = true;
	} else if (n - *i >= 10 && is_digit(s[*i]) && s[*i + 4] == '-') {
		int64_t d;

		if (parse_time(s + *i, 10, now, &d) != TIME_OK)
			return false;
		day = d;
		*i += 10;
		skip_spaces(s, n, i);
		has_day = true;
	}
	(void)take_word(s, n, i, "at");
	if (!take_clock(s, n, i, &clock)) {
		if (!has_day) {
			*i = j;
			return false;
		}
		clock = 0;
	}
	*ms = day + clock;
zone:
	(void)take_word(s, n, i, "utc");
	return true;
}

/*
 * "since <point>" (to now), "between <point> and <point>", "from <point>
 * to <point>", and "this morning" (06:00-12:00 UTC), "this afternoon"
 * (12:00-18:00), "this evening" (18:00-24:00), each cut at now.
 * RANGE_SYNTAX when s is none of these (parse_range goes on).
 */
static enum range_fail
parse_phrase(const char *s, size_t n, int64_t now, struct timerange *r)
{
	static const struct {
		const char *name;
		int from_h, to_h;
	} parts[] = {
		{"morning", 6, 12}, {"afternoon", 12, 18}, {"evening", 18, 24}};
	int64_t midnight = floor_div(now, MS_PER_DAY, NULL) * MS_PER_DAY;
	size_t i = 0;

	if (take_word(s, n, &i, "this")) {
		for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
			if (word_eq(s + i, n - i, parts[k].name)) {
				r->from_ms =
					midnight + parts[k].from_h * MS_PER_H;
				r->to_ms = midnight + parts[k].to_h * MS_PER_H;
				if (r->to_ms > now)
					r->to_ms = now;
				return r->from_ms < r->to_ms ? RANGE_OK
							     : RANGE_ZERO;
			}
		return RANGE_SYNTAX;
	}
	if (take_word(s, n, &i, "since")) {
		if (!take_point(s, n, &i, now, &r->from_ms) || i != n)
			return RANGE_SYNTAX;
		r->to_ms = now;
	} else if (take_word(s, n, &i, "between") ||
		   take_word(s, n, &i, "from")) {
		if (!take_point(s, n, &i, now, &r->from_ms) ||
		    !(take_word(s, n, &i, "and") ||
		      take_word(s, n, &i, "to")) ||
		    !take_point(s, n, &i, now, &r->to_ms) || i != n)
			return RANGE_SYNTAX;
	} else {
		return RANGE_SYNTAX;
	}
	if (r->to_ms - r->from_ms > TIMERANGE_MAX_MS)
		return RANGE_TOO_LONG;
	return r->from_ms < r->to_ms ? RANGE_OK : RANGE_ZERO;
}

/* ---- public ------------------------------------------------------------ */

int
timerange_parse(const char *range, const char *from, const char *to,
		int64_t now_ms, struct timerange *out, char *err, size_t errlen)
{
	const char *rs, *fs, *ts;
	size_t rn, fn, tn;
	struct timerange r = {0, 0};
	char q[QUOTE_CAP], q2[QUOTE_CAP], nowbuf[TIMERANGE_FORMAT_MAX];
	int rc = STATUS_INVALID;

	if (err && errlen > 0)
		err[0] = '\0';
	trim(range, &rs, &rn);
	trim(from, &fs, &fn);
	trim(to, &ts, &tn);
	if (now_ms < -NOW_LIMIT || now_ms > NOW_LIMIT) {
		set_err(err, errlen,
			"time_range cannot be resolved: the current time "
			"(%lld ms) is out of range",
			(long long)now_ms);
		goto out;
	}
	if (fn > 0) {
		enum time_fail tf;

		if (fn > INPUT_MAX ||
		    (tf = parse_time(fs, fn, now_ms, &r.from_ms)) != TIME_OK) {
			time_err(err, errlen, "from", fs, fn,
				 fn > INPUT_MAX ? TIME_SYNTAX : tf);
			goto out;
		}
		if (tn == 0) {
			r.to_ms = now_ms;
		} else if (tn > INPUT_MAX ||
			   (tf = parse_time(ts, tn, now_ms, &r.to_ms)) !=
				   TIME_OK) {
			time_err(err, errlen, "to", ts, tn,
				 tn > INPUT_MAX ? TIME_SYNTAX : tf);
			goto out;
		}
		quote(q, fs, fn);
		if (tn > 0)
			quote(q2, ts, tn);
		else
			(void)timerange_format(now_ms, nowbuf, sizeof(nowbuf));
		if (r.from_ms >= r.to_ms) {
			if (tn > 0)
				set_err(err, errlen,
					"from \"%s\" is not before to \"%s\": "
					"give a from earlier than to, in ISO "
					"8601 like \"2026-11-21T10:00:00Z\"",
					q, q2);
			else
				set_err(err, errlen,
					"from \"%s\" is not before now (%s): "
					"give a from in the past, or a to "
					"after it, in ISO 8601 like "
					"\"2026-11-21T10:00:00Z\"",
					q, nowbuf);
			goto out;
		}
		if (r.to_ms - r.from_ms > TIMERANGE_MAX_MS) {
			set_err(err, errlen,
				"from \"%s\" to %s%s%s spans more than %lld "
				"days: narrow from/to to at most %lld days",
				q, tn > 0 ? "\"" : "", tn > 0 ? q2 : "now",
				tn > 0 ? "\"" : "",
				(long long)(TIMERANGE_MAX_MS / MS_PER_DAY),
				(long long)(TIMERANGE_MAX_MS / MS_PER_DAY));
			goto out;
		}
	} else if (tn > 0) {
		quote(q, ts, tn);
		set_err(err, errlen,
			"to \"%s\" is given without from: give from as well "
			"(ISO 8601, e.g. \"2026-11-21T10:00:00Z\"), or drop to "
			"and use time_range",
			q);
		goto out;
	} else {
		enum range_fail rf = rn > INPUT_MAX
					     ? RANGE_SYNTAX
					     : parse_range(rs, rn, now_ms, &r);

		if (rn == 0)
			rf = RANGE_SYNTAX;
		if (rf != RANGE_OK) {
			quote(q, rs, rn);
			if (rf == RANGE_ZERO)
				set_err(err, errlen,
					"time_range \"%s\" is an empty range: "
					"%s",
					q, range_hint);
			else if (rf == RANGE_TOO_LONG)
				set_err(err, errlen,
					"time_range \"%s\" is longer than the "
					"%lld days accepted: %s",
					q,
					(long long)(TIMERANGE_MAX_MS /
						    MS_PER_DAY),
					range_hint);
			else
				set_err(err, errlen,
					"time_range \"%s\" is not understood: "
					"%s",
					q, range_hint);
			goto out;
		}
	}
	rc = STATUS_OK;
out:
	*out = rc == STATUS_OK ? r : (struct timerange){0, 0};
	return rc;
}

int
timerange_baseline(const struct timerange *r, const char *compare_to,
		   struct timerange *out, char *err, size_t errlen)
{
	const char *s;
	size_t n;
	int64_t shift = 0;
	char q[QUOTE_CAP];

	if (err && errlen > 0)
		err[0] = '\0';
	*out = (struct timerange){0, 0};
	trim(compare_to, &s, &n);
	if (word_eq(s, n, "previous") || word_eq(s, n, "prev") ||
	    word_eq(s, n, "before")) {
		shift = r->to_ms - r->from_ms;
	} else if (n > 0 && n <= INPUT_MAX) {
		const char *d = s;
		size_t dn = n;

		if (d[0] == '-') {
			d++;
			dn--;
		} else if (dn > 3 && word_eq(d + dn - 3, 3, "ago")) {
			dn -= 3;
		}
		trim_span(&d, &dn);
		if (parse_duration(d, dn, &shift) != RANGE_OK)
			shift = 0;
	}
	if (shift <= 0) {
		quote(q, s, n);
		set_err(err, errlen,
			"compare_to \"%s\" is not understood: use \"previous\" "
			"(the same length just before the range) or a shift "
			"back like \"1h\", \"1d\", \"7d\" (at most %lld days)",
			q, (long long)(TIMERANGE_MAX_MS / MS_PER_DAY));
		return STATUS_INVALID;
	}
	out->from_ms = r->from_ms - shift;
	out->to_ms = r->to_ms - shift;
	return STATUS_OK;
}

size_t
timerange_format(int64_t ms, char *buf, size_t cap)
{
	int64_t rem, days = floor_div(ms, MS_PER_DAY, &rem), y;
	int m, d, n;

	civil_from_days(days, &y, &m, &d);
	if (y >= 0 && y <= 9999) {
		/* the snprintf below without its cost (once per span second
		 * in query_traces) */
		char t[TIMERANGE_FORMAT_MAX];
		int v[] = {(int)y / 100,
			   (int)y % 100,
			   m,
			   d,
			   (int)(rem / MS_PER_H),
			   (int)(rem / MS_PER_MIN % 60),
			   (int)(rem / MS_PER_S % 60)};
		static const char sep[] = "  --T::"; /* before v[i] */
		size_t len = 0, k;

		for (size_t i = 0; i < sizeof(v) / sizeof(*v); i++) {
			if (i >= 2)
				t[len++] = sep[i];
			t[len++] = (char)('0' + v[i] / 10);
			t[len++] = (char)('0' + v[i] % 10);
		}
		if (rem % MS_PER_S != 0) {
			int f = (int)(rem % MS_PER_S);

			t[len++] = '.';
			t[len++] = (char)('0' + f / 100);
			t[len++] = (char)('0' + f / 10 % 10);
			t[len++] = (char)('0' + f % 10);
		}
		t[len++] = 'Z';
		if (cap > 0) {
			k = len < cap ? len : cap - 1;
			memcpy(buf, t, k);
			buf[k] = '\0';
		}
		return len;
	}
	if (rem % MS_PER_S == 0)
		n = snprintf(buf, cap, "%04lld-%02d-%02dT%02d:%02d:%02dZ",
			     (long long)y, m, d, (int)(rem / MS_PER_H),
			     (int)(rem / MS_PER_MIN % 60),
			     (int)(rem / MS_PER_S % 60));
	else
		n = snprintf(buf, cap, "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ",
			     (long long)y, m, d, (int)(rem / MS_PER_H),
			     (int)(rem / MS_PER_MIN % 60),
			     (int)(rem / MS_PER_S % 60), (int)(rem % MS_PER_S));
	return n < 0 ? 0 : (size_t)n;
}

size_t
timerange_describe(const struct timerange *r, int64_t now_ms, char *buf,
		   size_t cap)
{
	static const struct unit shown[] = {
		{"d", MS_PER_DAY},
		{"h", MS_PER_H},
		{"m", MS_PER_MIN},
		{"s", MS_PER_S},
	};
	char a[TIMERANGE_FORMAT_MAX], b[TIMERANGE_FORMAT_MAX];
	int n;

	if (r->to_ms == now_ms && r->from_ms < r->to_ms) {
		/* unsigned: from may be far below to without overflowing */
		uint64_t len = (uint64_t)r->to_ms - (uint64_t)r->from_ms;

		for (size_t i = 0; i < sizeof(shown) / sizeof(shown[0]); i++) {
			uint64_t u = (uint64_t)shown[i].ms;

			if (len % u == 0) {
				n = snprintf(buf, cap, "last %llu%s",
					     (unsigned long long)(len / u),
					     shown[i].name);
				return n < 0 ? 0 : (size_t)n;
			}
		}
	}
	(void)timerange_format(r->from_ms, a, sizeof(a));
	(void)timerange_format(r->to_ms, b, sizeof(b));
	n = snprintf(buf, cap, "%s .. %s", a, b);
	return n < 0 ? 0 : (size_t)n;
}
