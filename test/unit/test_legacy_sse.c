/*
 * test_legacy_sse.c - unit tests for the event reframing of the
 * 2024-11-05 HTTP+SSE transport (server/transport/legacy_sse.c): a session stream's
 * events (id, retry, data lines, keep-alive comments) become `event:
 * message` events without ids, whatever the cut between reads, and a full
 * output buffer is reported.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "transport/legacy_sse.h"

struct reframe_case {
	const char *name;
	const char *in;
	const char *want;
};

static const struct reframe_case cases[] = {
	{"one event", "id: 0123456789ab-0\ndata: {\"a\":1}\n\n",
	 "event: message\ndata: {\"a\":1}\n\n"},
	{"two events",
	 "id: s-0\ndata: {\"id\":1}\n\nid: s-1\ndata: {\"id\":2}\n\n",
	 "event: message\ndata: {\"id\":1}\n\n"
	 "event: message\ndata: {\"id\":2}\n\n"},
	{"retry line dropped", "id: s-0\nretry: 500\ndata: x\n\n",
	 "event: message\ndata: x\n\n"},
	{"keep-alive comment passes", ": keepalive\n\n", ": keepalive\n\n"},
	{"id without a space", "id:s-3\ndata: y\n\n",
	 "event: message\ndata: y\n\n"},
	{"multi-line data", "id: s-1\ndata: a\ndata: b\n\n",
	 "event: message\ndata: a\ndata: b\n\n"},
	{"fields that only start like id or retry pass",
	 "idx: 1\nre: 2\nretr: 3\ni\n", "idx: 1\nre: 2\nretr: 3\ni\n"},
	{"empty input", "", ""},
};

static void
reframe_in_steps(const char *in, size_t step, struct buf *out)
{
	struct legacy_sse_reframe rf;
	size_t n = strlen(in), off = 0;

	legacy_sse_reframe_init(&rf);
	while (off < n) {
		size_t k = step == 0 || n - off < step ? n - off : step;

		assert_int_equal(legacy_sse_reframe(&rf, in + off, k, out),
				 STATUS_OK);
		off += k;
	}
}

static void
test_reframe(void **state)
{
	static const size_t steps[] = {0, 1, 2, 3, 4, 7};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (j = 0; j < sizeof(steps) / sizeof(steps[0]); j++) {
			struct buf out;

			buf_init(&out, 4096);
			reframe_in_steps(cases[i].in, steps[j], &out);
			if (strcmp(out.data != NULL ? out.data : "",
				   cases[i].want) != 0)
				fail_msg("%s (reads of %zu): got \"%s\"",
					 cases[i].name, steps[j],
					 out.data != NULL ? out.data : "");
			buf_free(&out);
		}
	}
}

/* Output past the buffer's bound is an error, never an overrun. */
static void
test_reframe_bounded(void **state)
{
	struct legacy_sse_reframe rf;
	struct buf out;
	static const char in[] = "id: s-0\ndata: 0123456789\n\n";

	(void)state;
	buf_init(&out, 16);
	legacy_sse_reframe_init(&rf);
	assert_int_not_equal(legacy_sse_reframe(&rf, in, sizeof(in) - 1, &out),
			     STATUS_OK);
	assert_true(out.len <= 16);
	buf_free(&out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reframe),
		cmocka_unit_test(test_reframe_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
