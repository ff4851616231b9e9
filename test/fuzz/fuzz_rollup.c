/*
 * fuzz_rollup.c - libFuzzer harness for the rollup histogram text parser
 * (rollup_hist_add_text) and quantiles.
 *
 * The input is "<buckets>\n<counts>" (PostgreSQL array text, or bare
 * integers).  A failed add must leave the histogram as it was; quantiles
 * must be monotonic in q and lie between the smallest and largest bucket
 * value.  Invariant breaks abort().
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rollup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rollup_hist *h;
	char *text, *nl;
	int64_t before;
	double prev = -1;

	if (size > 4096)
		return 0;
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
