/*
 * test_spanread.c - unit tests for lib/telemetry/spanread against a
 * migrated throwaway PostgreSQL: one span whole, the OTLP row first when
 * both sources stored it; attributes in name order with their total, cut
 * at SPANREAD_ATTRS and values at SPANREAD_VALUE characters; events in
 * their order with offsets from the span's start (null for a bad time);
 * links; a span that is not there; a status failed by the outcome rule.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/hex.h"
#include "base/log.h"
#include "pg/pg.h"
#include "storetest.h"
#include "telemetry/spanread.h"

static struct storetest store;

#define TID "4bf92f3577b34da6a3ce929d0e0e4736"

static void
exec(struct pg_conn *c, const char *sql)
{
	storetest_exec(c, sql, -1);
}

static int
group_setup(void **state)
{
	struct pg_conn *c = storetest_setup(&store, state, NULL);

	if (c == NULL)
		return -1;
	/* span a: OTLP and eBPF rows; the OTLP one with 200 attributes (a
	 * long one among them), resource, two events (one with a bad time)
	 * and a link; a 503 on a server span, status unset */
	exec(c,
	     "INSERT INTO spans (trace_id, span_id, parent_span_id, source, "
	     "start_time, start_nanos, duration_ns, kind, status_code, "
	     "http_status_code, name, service_name, scope_name, "
	     "attributes, resource_attributes, events, links) SELECT "
	     "decode('" TID "', 'hex'), decode('00000000000000a1', 'hex'), "
	     "decode('00000000000000f0', 'hex'), 'otlp', t, 250, 5000000, "
	     "2, 0, 503, 'POST /checkout', 'checkout', 'io.otel.http', "
	     "(SELECT jsonb_object_agg(format('k%s', lpad(i::text, 3, "
	     "'0')), i) FROM generate_series(1, 199) i) || jsonb_build_object("
	     "'a.long', repeat('x', 3000), 'a.obj', '{\"n\": [1, 2]}'::jsonb), "
	     "'{\"service.name\": \"checkout\", \"host.name\": \"h1\"}', "
	     "jsonb_build_array(jsonb_build_object('name', 'retry', "
	     "'time_unix_nano', (sextant_unix_nano(t, 250::smallint) + "
	     "1500000)::text, 'attributes', '{\"attempt\": 2}'::jsonb), "
	     "jsonb_build_object('name', 'exception', 'time_unix_nano', "
	     "'soon', 'attributes', '{\"exception.type\": \"IOError\"}'"
	     "::jsonb)), '[{\"trace_id\": \"" TID "\", \"span_id\": "
	     "\"00000000000000b2\", \"attributes\": {\"why\": \"batch\"}}]' "
	     "FROM (SELECT date_trunc('second', now()) - interval '1 minute' "
	     "t) n");
	exec(c, "INSERT INTO spans (trace_id, span_id, source, start_time, "
		"duration_ns, kind, name, service_name, attributes) VALUES "
		"(decode('" TID "', 'hex'), decode('00000000000000a1', 'hex'), "
		"'ebpf', now() - interval '1 minute', 5100000, 2, "
		"'POST /checkout', 'checkout', '{\"k\": 1}')");
	pg_release(c);
	return 0;
}

/* The rows of span sid of TID, parsed: *n rows into out[]. */
static void
read_span(const char *sid, json_t *out[2], size_t *n)
{
	struct pg_conn *c = storetest_conn(&store);
	uint8_t t[16], s[8];
	struct spanread *r = NULL;
	struct pg_error err;

	assert_int_equal(hex_decode(TID, t, 16), STATUS_OK);
	assert_int_equal(hex_decode(sid, s, 8), STATUS_OK);
	if (spanread_send(c, t, s, &err) != STATUS_OK ||
	    spanread_recv(c, &r, &err) != STATUS_OK)
		fail_msg("spanread: %s (%s)", err.client, err.detail);
	*n = r->n;
	for (size_t i = 0; i < r->n; i++) {
		json_error_t je;

		out[i] = json_loads(r->json[i], 0, &je);
		if (out[i] == NULL)
			fail_msg("row %zu: %s: %s", i, je.text, r->json[i]);
		assert_string_equal(
			json_string_value(json_object_get(out[i], "source")),
			r->source[i]);
	}
	spanread_free(r);
	pg_release(c);
}

static void
test_whole_span(void **state)
{
	json_t *row[2] = {NULL, NULL}, *o, *a, *ev;
	size_t n;

	(void)state;
	read_span("00000000000000a1", row, &n);
	assert_int_equal(n, 2);
	o = row[0];
	assert_string_equal(json_string_value(json_object_get(o, "source")),
			    "otlp");
	assert_string_equal(
		json_string_value(json_object_get(row[1], "source")), "ebpf");
	assert_int_equal(json_integer_value(json_object_get(o, "duration_ns")),
			 5000000);
	assert_int_equal(json_integer_value(json_object_get(o, "kind")), 2);
	/* a server's 503 failed it, though its status is unset */
	assert_int_equal(json_integer_value(json_object_get(o, "status")), 2);
	assert_string_equal(
		json_string_value(json_object_get(o, "parent_span_id")),
		"00000000000000f0");
	assert_string_equal(json_string_value(json_object_get(o, "scope")),
			    "io.otel.http");
	/* 201 attributes, the first SPANREAD_ATTRS by name */
	a = json_object_get(o, "attributes");
	assert_int_equal(
		json_integer_value(json_object_get(o, "attributes_total")),
		201);
	assert_int_equal(json_array_size(a), SPANREAD_ATTRS);
	assert_string_equal(
		json_string_value(json_array_get(json_array_get(a, 0), 0)),
		"a.long");
	assert_string_equal(
		json_string_value(json_array_get(json_array_get(a, 1), 0)),
		"a.obj");
	assert_string_equal(
		json_string_value(json_array_get(json_array_get(a, 2), 0)),
		"k001");
	/* the long value cut, "…" added; the object kept as JSON */
	{
		const char *v = json_string_value(
			json_array_get(json_array_get(a, 0), 1));

		assert_non_null(v);
		assert_int_equal(strlen(v), SPANREAD_VALUE + strlen("…"));
		assert_string_equal(v + SPANREAD_VALUE, "…");
		assert_true(json_is_object(
			json_array_get(json_array_get(a, 1), 1)));
		assert_int_equal(json_integer_value(json_array_get(
					 json_array_get(a, 2), 1)),
				 1);
	}
	assert_int_equal(
		json_integer_value(json_object_get(o, "resource_total")), 2);
	assert_string_equal(
		json_string_value(json_array_get(
			json_array_get(json_object_get(o, "resource"), 0), 0)),
		"host.name");
	/* events in their order: 1.5 ms after the start, then a bad time */
	ev = json_object_get(o, "events");
	assert_int_equal(json_integer_value(json_object_get(o, "events_total")),
			 2);
	assert_int_equal(json_array_size(ev), 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(ev, 0), "name")),
			    "retry");
	assert_int_equal(json_integer_value(json_object_get(
				 json_array_get(ev, 0), "offset_ns")),
			 1500000);
	assert_true(json_is_null(
		json_object_get(json_array_get(ev, 1), "offset_ns")));
	assert_string_equal(
		json_string_value(json_array_get(
			json_array_get(json_object_get(json_array_get(ev, 1),
						       "attributes"),
				       0),
			1)),
		"IOError");
	assert_int_equal(json_integer_value(json_object_get(o, "links_total")),
			 1);
	assert_string_equal(
		json_string_value(json_object_get(
			json_array_get(json_object_get(o, "links"), 0),
			"span_id")),
		"00000000000000b2");
	/* the eBPF row: no events, no links, no resource */
	assert_int_equal(
		json_integer_value(json_object_get(row[1], "events_total")), 0);
	assert_int_equal(json_array_size(json_object_get(row[1], "events")), 0);
	assert_true(json_is_null(json_object_get(row[1], "parent_span_id")));
	json_decref(row[0]);
	json_decref(row[1]);
}

static void
test_no_such_span(void **state)
{
	json_t *row[2] = {NULL, NULL};
	size_t n = 9;

	(void)state;
	read_span("00000000000000a2", row, &n);
	assert_int_equal(n, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_whole_span),
		cmocka_unit_test(test_no_such_span),
	};

	return cmocka_run_group_tests(tests, group_setup, storetest_teardown);
}
