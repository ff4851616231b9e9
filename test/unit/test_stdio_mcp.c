/*
 * test_stdio_mcp.c - unit tests for the line framing of the stdio
 * transport (server/transport/stdio_mcp.c): lines split across reads in every way,
 * CRLF, blank lines, lines exactly at and past the bound (skipped without
 * being kept, reported once with their length, the next line intact), and
 * a last line without a newline at end of input.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/stdio_mcp.h"

/* What the callback saw, as text: "L<line>|" per line, "X<len>|" per line
 * too long. */
struct seen {
	char text[4096];
	size_t len;
	size_t max_kept; /* the most the framer held at once */
};

static void
on_line(void *arg, const char *line, size_t len, bool too_long)
{
	struct seen *s = arg;
	int n;

	if (too_long) {
		assert_null(line);
		n = snprintf(s->text + s->len, sizeof(s->text) - s->len,
			     "X%zu|", len);
	} else {
		assert_non_null(line);
		assert_true(len > 0);
		n = snprintf(s->text + s->len, sizeof(s->text) - s->len,
			     "L%.*s|", (int)len, line);
	}
	assert_true(n > 0 && (size_t)n < sizeof(s->text) - s->len);
	s->len += (size_t)n;
}

/* Feeds input in pieces of step bytes (0: all at once), then ends it. */
static void
run(const char *input, size_t max, size_t step, struct seen *s)
{
	struct stdio_mcp_lines l;
	size_t n = strlen(input), off = 0;

	memset(s, 0, sizeof(*s));
	stdio_mcp_lines_init(&l, max);
	while (off < n) {
		size_t k = step == 0 || n - off < step ? n - off : step;

		assert_int_equal(
			stdio_mcp_lines_feed(&l, input + off, k, on_line, s),
			STATUS_OK);
		if (l.line.len > s->max_kept)
			s->max_kept = l.line.len;
		off += k;
	}
	stdio_mcp_lines_finish(&l, on_line, s);
	assert_int_equal(l.line.len, 0);
	assert_int_equal(l.skipped, 0);
	stdio_mcp_lines_free(&l);
}

struct line_case {
	const char *name;
	const char *input;
	size_t max;
	const char *want;
};

static const struct line_case cases[] = {
	{"one line", "{\"a\":1}\n", 64, "L{\"a\":1}|"},
	{"two lines", "ab\ncd\n", 64, "Lab|Lcd|"},
	{"crlf", "ab\r\ncd\r\n", 64, "Lab|Lcd|"},
	{"lone cr inside a line passes", "a\rb\n", 64, "La\rb|"},
	{"blank and whitespace lines are skipped", "\n\r\n  \t\nab\n\n", 64,
	 "Lab|"},
	{"last line without newline at eof", "ab\ncd", 64, "Lab|Lcd|"},
	{"last line crlf without lf at eof", "ab\r", 64, "Lab|"},
	{"exactly max", "abcd\nx\n", 4, "Labcd|Lx|"},
	{"exactly max with crlf", "abcd\r\nx\n", 4, "Labcd|Lx|"},
	{"one past max", "abcde\nx\n", 4, "X5|Lx|"},
	{"one past max with crlf", "abcde\r\nx\n", 4, "X6|Lx|"},
	{"far past max, then a good line", "0123456789012345678901234\nok\n", 4,
	 "X25|Lok|"},
	{"two long lines in a row", "abcdefgh\nijklmnop\nq\n", 4, "X8|X8|Lq|"},
	{"long last line without newline", "ok\nabcdefgh", 4, "Lok|X8|"},
	{"empty input", "", 4, ""},
};

static void
test_lines(void **state)
{
	static const size_t steps[] = {0, 1, 2, 3, 5, 7};
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (j = 0; j < sizeof(steps) / sizeof(steps[0]); j++) {
			struct seen s;

			run(cases[i].input, cases[i].max, steps[j], &s);
			if (strcmp(s.text, cases[i].want) != 0)
				fail_msg("%s (reads of %zu): got \"%s\", want "
					 "\"%s\"",
					 cases[i].name, steps[j], s.text,
					 cases[i].want);
			/* A line is never held past the bound (+1 for the
			 * '\r' of a CRLF line). */
			assert_true(s.max_kept <= cases[i].max + 1);
		}
	}
}

/* Every split of the input in two reads gives the same lines. */
static void
test_every_split(void **state)
{
	static const char input[] = "{\"id\":1}\r\n\n123456789\n{\"id\":2}\n";
	static const char want[] = "L{\"id\":1}|X9|L{\"id\":2}|";
	size_t cut, n = sizeof(input) - 1;

	(void)state;
	for (cut = 0; cut <= n; cut++) {
		struct stdio_mcp_lines l;
		struct seen s;

		memset(&s, 0, sizeof(s));
		stdio_mcp_lines_init(&l, 8);
		assert_int_equal(
			stdio_mcp_lines_feed(&l, input, cut, on_line, &s),
			STATUS_OK);
		assert_int_equal(stdio_mcp_lines_feed(&l, input + cut, n - cut,
						      on_line, &s),
				 STATUS_OK);
		stdio_mcp_lines_finish(&l, on_line, &s);
		stdio_mcp_lines_free(&l);
		if (strcmp(s.text, want) != 0)
			fail_msg("cut at %zu: got \"%s\"", cut, s.text);
	}
}

/* A line of several MiB against a 1 KiB bound is counted, not kept. */
static void
test_huge_line_not_kept(void **state)
{
	size_t n = 4 << 20, i;
	char *big = malloc(n);
	struct stdio_mcp_lines l;
	struct seen s;

	(void)state;
	assert_non_null(big);
	memset(big, 'x', n);
	memset(&s, 0, sizeof(s));
	stdio_mcp_lines_init(&l, 1024);
	for (i = 0; i < n; i += 65536) {
		assert_int_equal(
			stdio_mcp_lines_feed(&l, big + i, 65536, on_line, &s),
			STATUS_OK);
		assert_true(l.line.len <= 1025);
	}
	assert_int_equal(stdio_mcp_lines_feed(&l, "\n{}\n", 4, on_line, &s),
			 STATUS_OK);
	stdio_mcp_lines_free(&l);
	assert_string_equal(s.text, "X4194304|L{}|");
	free(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_every_split),
		cmocka_unit_test(test_huge_line_not_kept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
