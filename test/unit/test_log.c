/*
 * test_log.c - unit tests for lib/base/log: level filtering, one valid JSON
 * object per line (parsed back with jansson), escaping, optional fields,
 * bounded lines and lines from concurrent threads.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"

/* ---- capturing output ------------------------------------------------- */

static FILE *cap_file;
static char *cap_buf;
static size_t cap_len;

static void
cap_start(void)
{
	cap_buf = NULL;
	cap_len = 0;
	cap_file = open_memstream(&cap_buf, &cap_len);
	assert_non_null(cap_file);
	log_set_output(cap_file);
}

/* Returns what was logged since cap_start; caller frees. */
static char *
cap_end(size_t *len)
{
	log_set_output(NULL);
	assert_int_equal(fclose(cap_file), 0);
	cap_file = NULL;
	if (len != NULL)
		*len = cap_len;
	return cap_buf;
}

static int
reset(void **state)
{
	(void)state;
	log_set_level(LOG_LEVEL_INFO);
	log_set_output(NULL);
	return 0;
}

/* Checks the line's shape and returns it parsed; caller decrefs. */
static json_t *
parse_line(const char *line, size_t len)
{
	json_error_t err;
	json_t *obj;

	assert_true(len >= 2);
	assert_true(len <= LOG_LINE_MAX);
	assert_int_equal(line[len - 1], '\n');
	/* Every control character inside the line must have been escaped. */
	for (size_t i = 0; i + 1 < len; i++)
		if ((unsigned char)line[i] < 0x20)
			fail_msg("raw control byte 0x%02x at %zu", line[i], i);
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			 &err);
	if (obj == NULL)
		fail_msg("invalid JSON (%s): %.*s", err.text, (int)len, line);
	assert_true(json_is_object(obj));
	assert_true(json_is_string(json_object_get(obj, "ts")));
	assert_true(json_is_string(json_object_get(obj, "level")));
	assert_true(json_is_string(json_object_get(obj, "msg")));
	return obj;
}

/* Output must be exactly one line; returns it parsed. */
static json_t *
only_line(const char *out, size_t len)
{
	const char *nl = memchr(out, '\n', len);

	assert_non_null(nl);
	assert_int_equal((size_t)(nl - out) + 1, len);
	return parse_line(out, len);
}

static const char *
get_str(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* ---- defaults --------------------------------------------------------- */

/* Runs first: no set-up at all, info level, lines go to stderr. */
static void
test_defaults(void **state)
{
	FILE *tmp;
	char buf[512];
	size_t n;
	int saved;
	json_t *obj;

	(void)state;
	assert_int_equal(log_get_level(), LOG_LEVEL_INFO);
	assert_false(log_enabled(LOG_LEVEL_DEBUG));
	assert_true(log_enabled(LOG_LEVEL_INFO));

	tmp = tmpfile();
	assert_non_null(tmp);
	fflush(stderr);
	saved = dup(STDERR_FILENO);
	assert_true(saved >= 0);
	assert_true(dup2(fileno(tmp), STDERR_FILENO) >= 0);
	log_info(NULL, "to stderr %d", 1);
	log_debug(NULL, "%s", "filtered");
	fflush(stderr);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);

	rewind(tmp);
	n = fread(buf, 1, sizeof(buf), tmp);
	fclose(tmp);
	obj = only_line(buf, n);
	assert_string_equal(get_str(obj, "msg"), "to stderr 1");
	assert_string_equal(get_str(obj, "level"), "info");
	json_decref(obj);
}

/* ---- levels ----------------------------------------------------------- */

static void
test_level_filter(void **state)
{
	(void)state;
	for (int set = LOG_LEVEL_DEBUG; set <= LOG_LEVEL_ERROR; set++) {
		log_set_level((enum log_level)set);
		assert_int_equal(log_get_level(), set);
		for (int lvl = LOG_LEVEL_DEBUG; lvl <= LOG_LEVEL_ERROR; lvl++) {
			bool want = lvl >= set;
			size_t len;
			char *out;

			assert_int_equal(log_enabled((enum log_level)lvl),
					 want);
			cap_start();
			log_msg((enum log_level)lvl, NULL, "m%d", lvl);
			switch (lvl) {
			case LOG_LEVEL_DEBUG:
				log_debug(NULL, "m%d", lvl);
				break;
			case LOG_LEVEL_INFO: log_info(NULL, "m%d", lvl); break;
			case LOG_LEVEL_WARN: log_warn(NULL, "m%d", lvl); break;
			default: log_error(NULL, "m%d", lvl); break;
			}
			out = cap_end(&len);
			if (!want) {
				assert_int_equal(len, 0);
			} else {
				/* Two identical lines: log_msg and macro. */
				const char *nl = memchr(out, '\n', len);
				size_t first;
				char name[16];
				json_t *a, *b;

				assert_non_null(nl);
				first = (size_t)(nl - out) + 1;
				a = parse_line(out, first);
				b = only_line(out + first, len - first);
				snprintf(name, sizeof(name), "m%d", lvl);
				assert_string_equal(get_str(a, "msg"), name);
				assert_string_equal(get_str(b, "msg"), name);
				assert_string_equal(
					get_str(a, "level"),
					log_level_name((enum log_level)lvl));
				assert_string_equal(get_str(b, "level"),
						    get_str(a, "level"));
				json_decref(a);
				json_decref(b);
			}
			free(out);
		}
	}
}

static void
test_level_clamped(void **state)
{
	(void)state;
	log_set_level((enum log_level)9);
	assert_int_equal(log_get_level(), LOG_LEVEL_ERROR);
	log_set_level((enum log_level) - 3);
	assert_int_equal(log_get_level(), LOG_LEVEL_DEBUG);
}

static int evaluated;

static int
side_effect(void)
{
	return ++evaluated;
}

/* The level is checked before the arguments are even evaluated. */
static void
test_disabled_not_evaluated(void **state)
{
	size_t len;
	char *out;

	(void)state;
	evaluated = 0;
	log_set_level(LOG_LEVEL_WARN);
	cap_start();
	log_debug(NULL, "%d", side_effect());
	log_info(NULL, "%d", side_effect());
	assert_int_equal(evaluated, 0);
	log_warn(NULL, "%d", side_effect());
	assert_int_equal(evaluated, 1);
	out = cap_end(&len);
	json_decref(only_line(out, len));
	free(out);
}

/* ---- line shape ------------------------------------------------------- */

static void
test_line_shape(void **state)
{
	struct tm tm;
	const char *ts, *rest;
	time_t before, after, when;
	size_t len;
	char *out;
	json_t *obj;

	(void)state;
	/* A zone 5 hours from UTC (POSIX TZ form, no tzdata needed). */
	assert_int_equal(setenv("TZ", "XYZ-5", 1), 0);
	tzset();
	cap_start();
	before = time(NULL);
	log_msg(LOG_LEVEL_WARN, NULL, "hello %d %s", 42, "world");
	after = time(NULL);
	out = cap_end(&len);
	obj = only_line(out, len);
	assert_int_equal(json_object_size(obj), 3);
	assert_string_equal(get_str(obj, "level"), "warn");
	assert_string_equal(get_str(obj, "msg"), "hello 42 world");
	/* Keys in the documented order: ts, level, msg. */
	assert_true(strncmp(out, "{\"ts\":\"", 7) == 0);
	assert_non_null(strstr(out, "\",\"level\":\"warn\",\"msg\":\"hello"));

	ts = get_str(obj, "ts");
	assert_int_equal(strlen(ts), 24);
	memset(&tm, 0, sizeof(tm));
	rest = strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm);
	assert_non_null(rest);
	assert_true(rest[0] == '.' && rest[1] >= '0' && rest[1] <= '9' &&
		    rest[2] >= '0' && rest[2] <= '9' && rest[3] >= '0' &&
		    rest[3] <= '9' && rest[4] == 'Z' && rest[5] == '\0');
	/* UTC: read back with timegm it is the second of the call, give or
	 * take one (time() may read a coarser clock than the log's), between
	 * the clocks read around it (a wall clock stepped meanwhile may have
	 * gone either way). */
	when = timegm(&tm);
	assert_true(when >= (before < after ? before : after) - 1 &&
		    when <= (before < after ? after : before) + 1);
	unsetenv("TZ");
	tzset();
	json_decref(obj);
	free(out);
}

static void
test_errno_preserved(void **state)
{
	char *out;

	(void)state;
	cap_start();
	errno = EINVAL;
	log_error(NULL, "%s", "x");
	assert_int_equal(errno, EINVAL);
	out = cap_end(NULL);
	free(out);
}

/* ---- escaping --------------------------------------------------------- */

static void
test_escaping(void **state)
{
	static const struct {
		const char *in;
		const char *want; /* decoded msg */
		const char *raw;  /* must appear verbatim in the line */
	} cases[] = {
		{"say \"hi\"", "say \"hi\"", "say \\\"hi\\\""},
		{"back\\slash", "back\\slash", "back\\\\slash"},
		{"a\nb\r\tc", "a\nb\r\tc", "a\\nb\\r\\tc"},
		{"\x01\x1f\x7f|\b\f", "\x01\x1f\x7f|\b\f",
		 "\\u0001\\u001f\\u007f|\\u0008\\u000c"},
		{"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"},
		{"bad\xff!", "bad\xef\xbf\xbd!", "bad\\ufffd!"},
		/* overlong '/' */
		{"\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd", "\\ufffd\\ufffd"},
		/* UTF-16 surrogate U+D800 */
		{"\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd",
		 "\\ufffd\\ufffd\\ufffd"},
		/* past U+10FFFF */
		{"\xf4\x90\x80\x80x",
		 "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx",
		 "\\ufffd\\ufffd\\ufffd\\ufffdx"},
		/* sequence cut short, then at the very end */
		{"\xe2\x82x\xe2\x82",
		 "\xef\xbf\xbd\xef\xbf\xbdx\xef\xbf\xbd\xef\xbf\xbd",
		 "\\ufffd\\ufffdx\\ufffd\\ufffd"},
		/* lone continuation byte */
		{"\x80", "\xef\xbf\xbd", "\\ufffd"},
		/* largest code point U+10FFFF is fine */
		{"\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},
		{"", "", "\"msg\":\"\""},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len;
		char *out;
		json_t *obj;

		cap_start();
		log_info(NULL, "%s", cases[i].in);
		out = cap_end(&len);
		obj = only_line(out, len);
		assert_string_equal(get_str(obj, "msg"), cases[i].want);
		if (memmem(out, len, cases[i].raw, strlen(cases[i].raw)) ==
		    NULL)
			fail_msg("case %zu: %s not in %s", i, cases[i].raw,
				 out);
		json_decref(obj);
		free(out);
	}
}

static void
test_escaping_nul(void **state)
{
	size_t len;
	char *out;
	json_t *obj, *msg;

	(void)state;
	cap_start();
	log_info(NULL, "a%cb", 0);
	out = cap_end(&len);
	obj = only_line(out, len);
	msg = json_object_get(obj, "msg");
	assert_int_equal(json_string_length(msg), 3);
	assert_memory_equal(json_string_value(msg), "a\0b", 3);
	assert_non_null(strstr(out, "a\\u0000b"));
	json_decref(obj);
	free(out);
}

/* ---- fields ----------------------------------------------------------- */

static void
test_fields(void **state)
{
	static const struct {
		struct log_fields f;
		const char *keys[7]; /* beyond ts, level, msg; NULL-ended */
	} cases[] = {
		{{NULL, NULL, NULL, NULL, -1, 0}, {NULL}},
		{{"r-1", NULL, NULL, NULL, -1, 0}, {"request_id"}},
		{{NULL, "s-1", NULL, NULL, -1, 0}, {"session"}},
		{{NULL, NULL, "tools/call", NULL, -1, 0}, {"method"}},
		{{NULL, NULL, NULL, "query_logs", -1, 0}, {"tool"}},
		{{NULL, NULL, NULL, NULL, 0, 0}, {"duration_ms"}},
		{{NULL, NULL, NULL, NULL, 12.5, 0}, {"duration_ms"}},
		{{NULL, NULL, NULL, NULL, 0.0004, 0}, {"duration_ms"}},
		{{NULL, NULL, NULL, NULL, 86400000.123, 0}, {"duration_ms"}},
		{{NULL, NULL, NULL, NULL, NAN, 0}, {NULL}},
		{{NULL, NULL, NULL, NULL, INFINITY, 0}, {NULL}},
		{{NULL, NULL, NULL, NULL, -0.5, 503}, {"status"}},
		{{NULL, NULL, NULL, NULL, -1, -32600}, {"status"}},
		{{"", "", "", "", 1e300, 200},
		 {"request_id", "session", "method", "tool", "duration_ms",
		  "status"}},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct log_fields *f = &cases[i].f;
		size_t len, nkeys = 3;
		char *out;
		json_t *obj;

		cap_start();
		log_info(f, "case %zu", i);
		out = cap_end(&len);
		obj = only_line(out, len);

		for (const char *const *k = cases[i].keys; *k != NULL; k++) {
			if (json_object_get(obj, *k) == NULL)
				fail_msg("case %zu: no %s in %s", i, *k, out);
			nkeys++;
		}
		if (json_object_size(obj) != nkeys)
			fail_msg("case %zu: want %zu keys: %s", i, nkeys, out);

		if (f->request_id != NULL)
			assert_string_equal(get_str(obj, "request_id"),
					    f->request_id);
		if (f->session != NULL)
			assert_string_equal(get_str(obj, "session"),
					    f->session);
		if (f->method != NULL)
			assert_string_equal(get_str(obj, "method"), f->method);
		if (f->tool != NULL)
			assert_string_equal(get_str(obj, "tool"), f->tool);
		if (json_object_get(obj, "duration_ms") != NULL) {
			json_t *d = json_object_get(obj, "duration_ms");

			double want =
				f->duration_ms < 1e15 ? f->duration_ms : 1e15;

			assert_true(json_is_real(d));
			/* Printed to the microsecond. */
			assert_true(fabs(json_real_value(d) - want) <=
				    0.0005 + 1e-12 * want);
		}
		if (f->status != 0)
			assert_int_equal(json_integer_value(json_object_get(
						 obj, "status")),
					 f->status);
		json_decref(obj);
		free(out);
	}
}

static void
test_field_escaping(void **state)
{
	struct log_fields f = {"id\"1\n",     "s\\\x01", "bad\xff",
			       "caf\xc3\xa9", -1,	 0};
	size_t len;
	char *out;
	json_t *obj;

	(void)state;
	cap_start();
	log_info(&f, "%s", "m");
	out = cap_end(&len);
	obj = only_line(out, len);
	assert_string_equal(get_str(obj, "request_id"), "id\"1\n");
	assert_string_equal(get_str(obj, "session"), "s\\\x01");
	assert_string_equal(get_str(obj, "method"), "bad\xef\xbf\xbd");
	assert_string_equal(get_str(obj, "tool"), "caf\xc3\xa9");
	json_decref(obj);
	free(out);
}

/* ---- truncation ------------------------------------------------------- */

static char *
repeat(const char *unit, size_t times)
{
	size_t n = strlen(unit);
	char *s = malloc(n * times + 1);

	assert_non_null(s);
	for (size_t i = 0; i < times; i++)
		memcpy(s + i * n, unit, n);
	s[n * times] = '\0';
	return s;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void
test_truncation(void **state)
{
	static const struct {
		const char *unit; /* repeated to make the message */
		size_t times;
		bool long_fields;
	} cases[] = {
		{"a", 10000, false},	   {"a", 10000, true},
		{"\xc3\xa9", 3000, false}, {"\xe2\x82\xac", 3000, true},
		{"\x01", 5000, false},	   {"\"", 5000, true},
		{"\xff", 2000, false},
	};
	char *longval = repeat("\"x", 1000);

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct log_fields f = {longval, longval, longval,
				       longval, 1.5,	 500};
		char *msg = repeat(cases[i].unit, cases[i].times);
		const char *got;
		size_t len, unit = strlen(cases[i].unit), n;
		char *out;
		json_t *obj, *decoded_unit;

		cap_start();
		log_error(cases[i].long_fields ? &f : NULL, "%s", msg);
		out = cap_end(&len);
		obj = only_line(out, len); /* also checks len <= LOG_LINE_MAX */
		got = get_str(obj, "msg");
		assert_true(ends_with(got, "..."));
		n = strlen(got) - 3;
		/* The message fills the line up to the last whole unit. */
		assert_true(len >= LOG_LINE_MAX - 8);
		/* What is left is whole units: no character cut in two. */
		decoded_unit =
			json_string(cases[i].unit[0] == '\xff' ? "\xef\xbf\xbd"
							       : cases[i].unit);
		if (decoded_unit != NULL) {
			unit = json_string_length(decoded_unit);
			assert_int_equal(n % unit, 0);
			for (size_t k = 0; k < n; k += unit)
				assert_memory_equal(
					got + k,
					json_string_value(decoded_unit), unit);
			json_decref(decoded_unit);
		}
		if (cases[i].long_fields) {
			const char *keys[] = {"request_id", "session", "method",
					      "tool"};

			for (size_t k = 0; k < 4; k++) {
				const char *v = get_str(obj, keys[k]);

				assert_non_null(v);
				assert_true(ends_with(v, "..."));
				assert_true(strlen(v) <= LOG_FIELD_MAX + 3);
				assert_true(strncmp(v, longval,
						    strlen(v) - 3) == 0);
			}
			assert_int_equal(json_integer_value(json_object_get(
						 obj, "status")),
					 500);
			assert_non_null(json_object_get(obj, "duration_ms"));
		}
		json_decref(obj);
		free(out);
		free(msg);
	}
	free(longval);
}

/* A message that fits is never cut. */
static void
test_no_truncation_when_fits(void **state)
{
	char *msg = repeat("b", 3000);
	size_t len;
	char *out;
	json_t *obj;

	(void)state;
	cap_start();
	log_info(NULL, "%s", msg);
	out = cap_end(&len);
	obj = only_line(out, len);
	assert_string_equal(get_str(obj, "msg"), msg);
	json_decref(obj);
	free(out);
	free(msg);
}

/* ---- names ------------------------------------------------------------ */

static void
test_level_parse(void **state)
{
	static const struct {
		const char *name;
		int want;
	} cases[] = {
		{"debug", LOG_LEVEL_DEBUG},
		{"info", LOG_LEVEL_INFO},
		{"warn", LOG_LEVEL_WARN},
		{"warning", LOG_LEVEL_WARN},
		{"error", LOG_LEVEL_ERROR},
		{"ERROR", LOG_LEVEL_ERROR},
		{"Info", LOG_LEVEL_INFO},
		{"", -1},
		{"fatal", -1},
		{"debug ", -1},
		{"inf", -1},
		{"trace", -1},
		{NULL, -1},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (log_level_parse(cases[i].name) != cases[i].want)
			fail_msg("%s: want %d",
				 cases[i].name ? cases[i].name : "(null)",
				 cases[i].want);
	for (int l = LOG_LEVEL_DEBUG; l <= LOG_LEVEL_ERROR; l++)
		assert_int_equal(
			log_level_parse(log_level_name((enum log_level)l)), l);
	assert_string_equal(log_level_name(LOG_LEVEL_WARN), "warn");
	assert_string_equal(log_level_name((enum log_level)7), "unknown");
}

/* ---- concurrent writers ----------------------------------------------- */

#define WRITERS		 8
#define LINES_PER_WRITER 1000

static void *
writer_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	char msg[6000];

	for (int i = 0; i < LINES_PER_WRITER; i++) {
		/* Lengths up to past the limit, so some lines are cut. */
		size_t n = 1 + (size_t)(i * 37 + id * 11) % (sizeof(msg) - 1);
		struct log_fields f = {
			.request_id = "r", .duration_ms = -1, .status = id + 1};

		memset(msg, 'A' + id, n);
		msg[n] = '\0';
		log_info(&f, "%s", msg);
	}
	return NULL;
}

static void
test_concurrent_lines(void **state)
{
	pthread_t tids[WRITERS];
	FILE *tmp = tmpfile();
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lines = 0, per_writer[WRITERS] = {0};

	(void)state;
	assert_non_null(tmp);
	log_set_output(tmp);
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(pthread_create(&tids[i], NULL, writer_main,
						(void *)(intptr_t)i),
				 0);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(tids[i], NULL);
	log_set_output(NULL);

	rewind(tmp);
	while ((n = getline(&line, &cap, tmp)) > 0) {
		json_t *obj = parse_line(line, (size_t)n);
		int id = (int)json_integer_value(
				 json_object_get(obj, "status")) -
			 1;
		const char *msg = get_str(obj, "msg");
		size_t mlen = strlen(msg);

		assert_true(id >= 0 && id < WRITERS);
		if (ends_with(msg, "..."))
			mlen -= 3;
		/* One writer's characters only: nothing interleaved. */
		for (size_t k = 0; k < mlen; k++)
			assert_int_equal(msg[k], 'A' + id);
		per_writer[id]++;
		lines++;
		json_decref(obj);
	}
	free(line);
	fclose(tmp);
	assert_int_equal(lines, WRITERS * LINES_PER_WRITER);
	for (int i = 0; i < WRITERS; i++)
		assert_int_equal(per_writer[i], LINES_PER_WRITER);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_defaults, reset),
		cmocka_unit_test_teardown(test_level_filter, reset),
		cmocka_unit_test_teardown(test_level_clamped, reset),
		cmocka_unit_test_teardown(test_disabled_not_evaluated, reset),
		cmocka_unit_test_teardown(test_line_shape, reset),
		cmocka_unit_test_teardown(test_errno_preserved, reset),
		cmocka_unit_test_teardown(test_escaping, reset),
		cmocka_unit_test_teardown(test_escaping_nul, reset),
		cmocka_unit_test_teardown(test_fields, reset),
		cmocka_unit_test_teardown(test_field_escaping, reset),
		cmocka_unit_test_teardown(test_truncation, reset),
		cmocka_unit_test_teardown(test_no_truncation_when_fits, reset),
		cmocka_unit_test_teardown(test_level_parse, reset),
		cmocka_unit_test_teardown(test_concurrent_lines, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
