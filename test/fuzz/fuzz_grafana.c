/*
 * fuzz_grafana.c - libFuzzer harness for the answer parsers of lib/prom/grafana
 * (range-query matrix, metric names, metadata, Grafana data source) and for
 * lib/prom/promql's quoting, which labels from those answers go through when
 * shown.
 *
 * Input: one mode byte, then the body.  Checks the contract: on success
 * every series is well formed (points in time order, labels sorted and
 * NUL-terminated, counts that add up, at most max points), on failure the
 * out-parameter is NULL and the message is one NUL-terminated line;
 * quoting yields a literal that starts and ends with '"' and holds no raw
 * control byte.  Invariant breaks abort().
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "prom/grafana.h"
#include "prom/promql.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_msg(const char *msg, size_t cap)
{
	if (strnlen(msg, cap) >= cap || strchr(msg, '\n') != NULL)
		abort();
}

static void
check_matrix(const struct grafana_matrix *m, size_t max)
{
	size_t points = 0;

	if (m->npoints > max || m->nseries > GRAFANA_MAX_SERIES)
		abort();
	for (size_t i = 0; i < m->nseries; i++) {
		const struct grafana_series *s = &m->series[i];

		for (size_t j = 0; j < s->nlabels; j++) {
			if (s->labels[j].name == NULL ||
			    s->labels[j].value == NULL)
				abort();
			if (j > 0 && strcmp(s->labels[j - 1].name,
					    s->labels[j].name) > 0)
				abort();
		}
		for (size_t j = 1; j < s->npoints; j++)
			if (s->points[j].t_ms <= s->points[j - 1].t_ms)
				abort();
		points += s->npoints;
	}
	if (points != m->npoints)
		abort();
}

static void
check_quote(const char *s)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	if (promql_quote(&b, s) == STATUS_OK) {
		if (b.len < 2 || b.data[0] != '"' || b.data[b.len - 1] != '"')
			abort();
		for (size_t i = 0; i < b.len; i++) {
			unsigned char c = (unsigned char)b.data[i];

			if (c < 0x20 || c == 0x7f)
				abort();
			/* every quote inside is escaped */
			if (c == '"' && i > 0 && i < b.len - 1 &&
			    b.data[i - 1] != '\\')
				abort();
		}
	}
	buf_free(&b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data + 1;
	size_t len = size - 1;
	struct grafana_counts total;
	char msg[256];
	int rc;

	if (size < 1)
		return 0;
	switch (data[0] % 5) {
	case 0: {
		struct grafana_matrix *m = (struct grafana_matrix *)1;
		size_t max = 1 + data[0] / 5 * 4;

		rc = grafana_parse_matrix(body, len, max, &m, &total, msg,
					  sizeof(msg));
		if (rc == STATUS_OK) {
			check_matrix(m, max);
			if (total.points != m->npoints ||
			    total.series != m->nseries)
				abort();
			for (size_t i = 0; i < m->nseries; i++)
				for (size_t j = 0; j < m->series[i].nlabels;
				     j++)
					check_quote(
						m->series[i].labels[j].value);
		} else {
			if (m != NULL)
				abort();
			check_msg(msg, sizeof(msg));
		}
		grafana_matrix_free(m);
		break;
	}
	case 1: {
		struct grafana_names *n = (struct grafana_names *)1;

		rc = grafana_parse_names(body, len, &n, msg, sizeof(msg));
		if (rc == STATUS_OK) {
			for (size_t i = 1; i < n->n; i++)
				if (strcmp(n->v[i - 1], n->v[i]) > 0)
					abort();
			for (size_t i = 0; i < n->n; i++)
				if (!grafana_names_has(n, n->v[i]))
					abort();
			grafana_names_release(n);
		} else if (n != NULL) {
			abort();
		} else {
			check_msg(msg, sizeof(msg));
		}
		break;
	}
	case 2: {
		struct grafana_metadata md;

		rc = grafana_parse_metadata(body, len, "m", &md, msg,
					    sizeof(msg));
		if (rc == STATUS_OK &&
		    (strnlen(md.type, sizeof(md.type)) >= sizeof(md.type) ||
		     strnlen(md.unit, sizeof(md.unit)) >= sizeof(md.unit) ||
		     strnlen(md.help, sizeof(md.help)) >= sizeof(md.help)))
			abort();
		if (rc != STATUS_OK)
			check_msg(msg, sizeof(msg));
		break;
	}
	case 3: {
		char uid[64];

		rc = grafana_parse_datasource(body, len, uid, sizeof(uid), msg,
					      sizeof(msg));
		if (rc == STATUS_OK &&
		    (uid[0] == '\0' ||
		     strnlen(uid, sizeof(uid)) >= sizeof(uid)))
			abort();
		if (rc != STATUS_OK)
			check_msg(msg, sizeof(msg));
		break;
	}
	case 4: {
		char *s = strndup(body, len);

		if (s != NULL)
			check_quote(s);
		free(s);
		break;
	}
	}
	return 0;
}
