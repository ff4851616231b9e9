/*
 * test_jsonload.c - unit tests for lib/json/jsonload: what the fast path
 * parses itself (and that it builds what json_loadb builds), what it
 * leaves to json_loadb, and that jsonload() then answers as json_loadb
 * does, error position included.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jsonload.h"

static json_t *
reference(const char *s, size_t n, json_error_t *err)
{
	return json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, err);
}

/* s is parsed by the fast path into exactly what json_loadb builds. */
static void
assert_fast(const char *s, size_t n)
{
	json_error_t err;
	json_t *fast = jsonload_fast(s, n), *ref = reference(s, n, &err);
	char *a, *b;

	assert_non_null(ref);
	if (fast == NULL)
		fail_msg("fast path gave up on %.*s", (int)n, s);
	a = json_dumps(fast, JSON_ENCODE_ANY | JSON_COMPACT);
	b = json_dumps(ref, JSON_ENCODE_ANY | JSON_COMPACT);
	assert_string_equal(a, b);
	assert_true(json_equal(fast, ref));
	free(a);
	free(b);
	json_decref(fast);
	json_decref(ref);
}

/* The fast path gives s up, and jsonload() answers as json_loadb. */
static void
assert_deferred(const char *s, size_t n)
{
	json_error_t e1, e2;
	json_t *ref = reference(s, n, &e1), *full = jsonload(s, n, &e2);

	if (jsonload_fast(s, n) != NULL)
		fail_msg("fast path accepted %.*s", (int)n, s);
	if (ref == NULL) {
		assert_null(full);
		assert_string_equal(e1.text, e2.text);
		assert_int_equal(e1.line, e2.line);
		assert_int_equal(e1.column, e2.column);
	} else {
		assert_non_null(full);
		assert_true(json_equal(full, ref));
	}
	json_decref(ref);
	json_decref(full);
}

#define FAST(s)	    assert_fast(s, sizeof(s) - 1)
#define DEFERRED(s) assert_deferred(s, sizeof(s) - 1)

static void
test_requests(void **state)
{
	(void)state;
	FAST("{\"jsonrpc\":\"2.0\",\"id\":1000000001,\"method\":\"tools/list\","
	     "\"params\":{\"_meta\":{\"io.modelcontextprotocol/"
	     "protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/"
	     "clientCapabilities\":{},\"io.modelcontextprotocol/clientInfo\":"
	     "{\"name\":\"sextant-bench\",\"version\":\"1.0\"}}}}");
	FAST("[{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"},"
	     "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]");
	FAST(" \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : { } , \"c\" : [ ] } \n");
}

static void
test_scalars(void **state)
{
	(void)state;
	FAST("0");
	FAST("-0");
	FAST("-12");
	FAST("123456789012345678");
	FAST("-123456789012345678");
	FAST("true");
	FAST("false");
	FAST("null");
	FAST("\"\"");
	FAST("[true,false,null,0,\"x\"]");
}

static void
test_strings(void **state)
{
	(void)state;
	FAST("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"");
	FAST("\"\\u00e9\\u20AC\\ud83d\\ude00\"");
	FAST("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"");
	FAST("{\"k\\u00e9y\\n\":\"v\"}");
	/* Escaped keys next to escaped values (separate buffers). */
	FAST("{\"a\\tb\":\"c\\td\",\"e\\u0041\":{\"f\\\"\":\"g\\\\\"}}");
}

static void
test_long_escaped_string(void **state)
{
	char s[2000];
	size_t n = 0;

	(void)state;
	s[n++] = '{';
	s[n++] = '"';
	for (int i = 0; i < 300; i++) {
		s[n++] = '\\';
		s[n++] = 'n';
	}
	memcpy(s + n, "\":\"", 3);
	n += 3;
	for (int i = 0; i < 200; i++) {
		memcpy(s + n, "\\u00e9", 6);
		n += 6;
	}
	s[n++] = '"';
	s[n++] = '}';
	assert_fast(s, n);
}

static void
test_deferred_valid(void **state)
{
	(void)state;
	DEFERRED("1.5");
	DEFERRED("1e3");
	DEFERRED("[1E3]");
	DEFERRED("1234567890123456789");
	DEFERRED("-9223372036854775808");
}

static void
test_deferred_invalid(void **state)
{
	(void)state;
	DEFERRED("");
	DEFERRED("   ");
	DEFERRED("{\"a\":1,\"a\":2}");
	DEFERRED("{\"a\":1,}");
	DEFERRED("[1,]");
	DEFERRED("[1 2]");
	DEFERRED("{\"a\" 1}");
	DEFERRED("{\"a\":1");
	DEFERRED("01");
	DEFERRED("-");
	DEFERRED("-a");
	DEFERRED("truex");
	DEFERRED("nul");
	DEFERRED("{} {}");
	DEFERRED("\"\\u0000\"");
	DEFERRED("{\"\\u0000\":1}");
	DEFERRED("\"\\ud800\"");
	DEFERRED("\"\\udc00\"");
	DEFERRED("\"\\ud800\\u0041\"");
	DEFERRED("\"\\x\"");
	DEFERRED("\"\\u12\"");
	DEFERRED("\"a\tb\"");
	DEFERRED("\"\xc0\xaf\"");
	DEFERRED("\"\xed\xa0\x80\"");
	DEFERRED("\"\xf4\x90\x80\x80\"");
	DEFERRED("\"\xe2\x82\"");
	DEFERRED("\"abc");
	DEFERRED("\xef\xbb\xbf{}");
	DEFERRED("{\"a\":\n  [1,\n   x]}");
	/* A NUL byte inside the buffer. */
	assert_deferred("\"a\0b\"", 5);
	assert_deferred("{}\0", 3);
}

/* Deeper than JSONLOAD_FAST_DEPTH: json_loadb parses it. */
static void
test_depth(void **state)
{
	char s[2 * (JSONLOAD_FAST_DEPTH + 1)];
	size_t d = JSONLOAD_FAST_DEPTH;

	(void)state;
	memset(s, '[', d);
	memset(s + d, ']', d);
	assert_fast(s, 2 * d);
	memset(s, '[', d + 1);
	memset(s + d + 1, ']', d + 1);
	assert_deferred(s, 2 * (d + 1));
}

#define META_A                                                                 \
	"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","         \
	"\"io.modelcontextprotocol/clientCapabilities\":{\"x\":[\"}\\\"\"]},"  \
	"\"io.modelcontextprotocol/clientInfo\":{\"name\":\"a\"}}"
#define META_B                                                                 \
	"{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","         \
	"\"io.modelcontextprotocol/clientCapabilities\":{\"x\":[\"}\\\"\"]},"  \
	"\"io.modelcontextprotocol/clientInfo\":{\"name\":\"b\"}}"

static const json_t *
meta_of(const json_t *msg)
{
	return json_object_get(json_object_get(msg, "params"), "_meta");
}

/* The same params._meta bytes give one shared value (the _meta cache);
 * other bytes, or a _meta elsewhere, give their own; every result is what
 * json_loadb builds. */
static void
test_meta_cache(void **state)
{
	const char *a = "{\"id\":1,\"params\":{\"_meta\":" META_A "}}";
	const char *a2 = "{\"id\":2,\"params\":{\"x\":1,\"_meta\":" META_A "}}";
	const char *b = "{\"id\":3,\"params\":{\"_meta\":" META_B "}}";
	const char *deep = "{\"params\":{\"y\":{\"_meta\":" META_A "}}}";
	json_t *ma, *ma2, *mb, *md;

	(void)state;
	assert_fast(a, strlen(a));
	assert_fast(a2, strlen(a2));
	assert_fast(b, strlen(b));
	assert_fast(deep, strlen(deep));
	ma = jsonload_fast(a, strlen(a));
	ma2 = jsonload_fast(a2, strlen(a2));
	mb = jsonload_fast(b, strlen(b));
	md = jsonload_fast(deep, strlen(deep));
	assert_non_null(ma);
	assert_non_null(ma2);
	assert_non_null(mb);
	assert_non_null(md);
	assert_ptr_equal(meta_of(ma), meta_of(ma2));
	assert_ptr_not_equal(meta_of(ma), meta_of(mb));
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(meta_of(mb),
					"io.modelcontextprotocol/clientInfo"),
			"name")),
		"b");
	assert_ptr_not_equal(
		json_object_get(
			json_object_get(json_object_get(md, "params"), "y"),
			"_meta"),
		meta_of(ma));
	/* A result keeps its _meta after the cache lets go of it. */
	json_decref(ma2);
	for (int i = 0; i < 40; i++) {
		char m[300];
		json_t *v;

		snprintf(m, sizeof(m),
			 "{\"params\":{\"_meta\":{\"n\":%d,\"pad\":\"%0*d\"}}}",
			 i, i, 0);
		v = jsonload_fast(m, strlen(m));
		assert_non_null(v);
		assert_int_equal(
			json_integer_value(json_object_get(meta_of(v), "n")),
			i);
		json_decref(v);
	}
	assert_string_equal(json_string_value(json_object_get(
				    meta_of(ma),
				    "io.modelcontextprotocol/protocolVersion")),
			    "2026-07-28");
	json_decref(ma);
	json_decref(mb);
	json_decref(md);
}

/* A _meta the cache cannot take (unclosed, or not an object) is left to
 * the parse, which gives up or parses it. */
static void
test_meta_odd(void **state)
{
	(void)state;
	DEFERRED("{\"params\":{\"_meta\":{\"a\":\"}");
	DEFERRED("{\"params\":{\"_meta\":{\"a\":1,\"a\":2}}}");
	DEFERRED("{\"params\":{\"_meta\":{\"a\":\"\\");
	FAST("{\"params\":{\"_meta\":null}}");
	FAST("{\"params\":{\"_meta\":[1,{\"_meta\":{}}]}}");
	FAST("{\"params\":{\"_meta\":{}}}");
	FAST("{\"params\":{\"_meta\":{}}}");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_requests),
		cmocka_unit_test(test_scalars),
		cmocka_unit_test(test_strings),
		cmocka_unit_test(test_long_escaped_string),
		cmocka_unit_test(test_deferred_valid),
		cmocka_unit_test(test_deferred_invalid),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_meta_cache),
		cmocka_unit_test(test_meta_odd),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
