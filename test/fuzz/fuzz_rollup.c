/*
 * fuzz_rollup.c - libFuzzer harness for the rollup histogram text parser
 * (rollup_hist_add_text) and quantiles, and the split of a query range
 * (rollup_split_range).
 *
 * The input is "<buckets>\n<counts>" (PostgreSQL array text, or bare
 * integers).  A failed add must leave the histogram as it was; quantiles
 * must be monotonic in q and lie between the smallest and largest bucket
 * value.  The first 24 bytes, as three int64 (from, to, now), must split
 * into ordered, whole, settled parts inside the range.  Invariant breaks
 * abort().
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "telemetry/rollup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_split(const uint8_t *data, size_t size)
{
	const int64_t minute = ROLLUP_MINUTE_S * 1000LL,
		      hour = ROLLUP_PERIOD_S * 1000LL,
		      settle = ROLLUP_SETTLE_S * 1000LL;
	int64_t t[3];
	struct rollup_split sp;

	if (size < sizeof(t))
		return;
	memcpy(t, data, sizeof(t));
	if (!rollup_split_range(t[0], t[1], t[2], &sp)) {
		if (sp.minute_from != t[0] || sp.minute_to != t[0] ||
		    sp.hour_from != t[0] || sp.hour_to != t[0])
			abort();
		return;
	}
	/* from <= minutes <= to, whole, settled; hours inside them */
	if (!(t[0] <= sp.minute_from && sp.minute_from < sp.minute_to &&
	      sp.minute_to <= t[1] && sp.minute_to <= t[2] - settle &&
	      sp.minute_from % minute == 0 && sp.minute_to % minute == 0 &&
	      sp.minute_from - t[0] < minute &&
	      sp.minute_from <= sp.hour_from && sp.hour_from <= sp.hour_to &&
	      sp.hour_to <= sp.minute_to))
		abort();
	if (sp.hour_from == sp.hour_to
		    ? sp.hour_to != sp.minute_to
		    : sp.hour_from % hour != 0 || sp.hour_to % hour != 0 ||
			      sp.hour_to > t[2] - settle)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rollup_hist *h;
	char *text, *nl;
	int64_t before;
	double prev = -1;

	if (size > 4096)
		return 0;
	check_split(data, size);
	text = malloc(size + 1);
	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	nl = strchr(text, '\n');
	h = rollup_hist_new();
	if (nl == NULL || h == NULL)
		goto out;
	*nl = '\0';
	/* a seed so that a failure has something to leave untouched */
	if (rollup_hist_add(h, 7, 3) != 0)
		abort();
	before = rollup_hist_count(h);
	if (rollup_hist_add_text(h, text, nl + 1) != 0 &&
	    rollup_hist_count(h) != before)
		abort();
	for (int i = 0; i <= 20; i++) {
		double v = rollup_hist_quantile(h, i / 20.0);

		if (!(v >= prev) || v < 0)
			abort();
		prev = v;
	}
out:
	rollup_hist_free(h);
	free(text);
	return 0;
}
