/*
 * grafana.c - one metrics instance's client (see grafana.h): libcurl easy
 * handles in a pool of max_concurrent slots, the retry loop, the circuit
 * breaker, the bearer token, data source resolution, the name and
 * metadata caches, and the parsers of Prometheus's JSON answers.
 *
 * Locking: g->mu guards the breaker, the slot stack, the token, the
 * resolved data source and both caches; g->cv signals a freed slot and
 * waits on CLOCK_MONOTONIC.  Nothing blocks on the network or sleeps with
 * g->mu held.  A slot is owned by one request from slot_acquire to
 * slot_release, and so is its CURL handle: never two threads on a handle.
 *
 * A request: breaker_admit (fail fast while open; one probe when
 * half-open) -> slot_acquire (wait at most queue_timeout_ms) -> attempts
 * (the first plus up to `retries` after connection errors and 5xx, never
 * after 4xx; backoff base * 2^n, half of it random) -> slot_release ->
 * breaker_record (any answer below 500 proves the upstream reachable; a
 * connection error, 5xx or timeout after the retries counts one failure).
 */
#include "prom/grafana.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/clock.h"
#include "base/curlx.h"
#include "base/log.h"
#include "base/utf8.h"

/* Backoff between two attempts never exceeds this, whatever the count. */
#define MAX_BACKOFF_MS 10000
/* Waits (slot, backoff) wake this often to look at cancellation. */
#define POLL_MS 50
/* The longest upstream error text quoted to the client. */
#define QUOTE_MAX 300
/* A URL we build: base (checked <= 400 bytes) + path + escaped names. */
#define URL_BUF_MAX 8192

struct meta_entry {
	char *metric; /* NULL: free slot */
	struct grafana_metadata md;
	int64_t fetched_ms;
};

struct grafana {
	/* settings, immutable after grafana_new */
	struct grafana_config cfg; /* strings point at the copies below */
	char *name, *base, *ds_uid_cfg, *ds_name_cfg, *token_cfg, *token_file,
		*ca_file;
	struct grafana_metrics m;
	atomic_uint_fast64_t rng;

	pthread_mutex_t mu;
	pthread_cond_t cv; /* a slot was released */
	/* slots: handles[i] is NULL until its first use */
	CURL **handles;
	int *free_slots, nfree;
	int inflight, waiting;
	/* breaker */
	enum grafana_breaker state;
	int failures; /* consecutive */
	int64_t open_until_ms;
	bool probe_out; /* half-open: the trial request is under way */
	/* token from token_file, with what identified the file's version */
	char *token_file_value;
	struct timespec tok_mtime;
	off_t tok_size;
	ino_t tok_ino;
	bool tok_loaded;
	/* the Grafana data source's uid once resolved */
	char *ds_uid;
	/* caches */
	struct grafana_names *names;
	struct meta_entry meta[GRAFANA_METADATA_CACHE];
};

/* ---- small helpers ----------------------------------------------------- */

PRINTF_LIKE(3, 4)
static void
say(char *dst, size_t cap, const char *fmt, ...)
{
	va_list ap;

	if (dst == NULL || cap == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(dst, cap, fmt, ap);
	va_end(ap);
}

/* At most max bytes of s (len bytes) for a message: white space runs as
 * one space, other control bytes and broken UTF-8 as '?', "..." when
 * cut. */
static const char *
excerpt(const char *s, size_t len, size_t max, char *buf, size_t cap)
{
	size_t i = 0, n = 0;

	while (i < len && i < max && n + 8 < cap) {
		unsigned char c = (unsigned char)s[i];
		size_t l = c < 0x80 ? 1
				    : utf8_len((const unsigned char *)s + i,
					       len - i);

		if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
			/* runs of white space (an HTML error page) as one */
			if (n > 0 && buf[n - 1] != ' ')
				buf[n++] = ' ';
			i++;
			continue;
		}
		if (l == 0 || c < 0x20 || c == 0x7f) {
			buf[n++] = '?';
			i++;
			continue;
		}
		memcpy(buf + n, s + i, l);
		n += l;
		i += l;
	}
	if (i < len && n + 4 <= cap) {
		memcpy(buf + n, "...", 3);
		n += 3;
	}
	buf[n] = '\0';
	return buf;
}

/* RFC 3986 unreserved characters pass; everything else is %XX.  Appends
 * (buf.h): the caller checks b once. */
static void
pct_encode(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '.' ||
		    c == '_' || c == '~') {
			buf_append(b, s, 1);
		} else {
			char e[3] = {'%', hex[c >> 4], hex[c & 15]};

			buf_append(b, e, 3);
		}
	}
}

static char *
dup_opt(const char *s, bool *nomem)
{
	char *d;

	if (s == NULL || s[0] == '\0')
		return NULL;
	d = strdup(s);
	if (d == NULL)
		*nomem = true;
	return d;
}

/* A bearer token goes into an HTTP header: visible ASCII only, so no
 * value can add a header line. */
static bool
token_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x21 || (unsigned char)s[i] > 0x7e)
			return false;
	return true;
}

/* splitmix64 over a shared counter: thread-safe and good enough for
 * jitter. */
static uint64_t
rng_next(struct grafana *g)
{
	uint64_t z = atomic_fetch_add(&g->rng, UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static bool
cancelled(const struct grafana_opts *o)
{
	return o != NULL && o->cancelled != NULL && o->cancelled(o->arg);
}

static void
fields_of(const struct grafana_opts *o, struct log_fields *f)
{
	*f = (struct log_fields){.duration_ms = -1};
	f->request_id = o != NULL ? o->request_id : NULL;
}

/* Sleeps ms, waking to look at cancellation; false when cancelled. */
static bool
nap(const struct grafana_opts *o, int64_t ms)
{
	int64_t end = clock_mono_ms() + ms;

	for (;;) {
		int64_t left = end - clock_mono_ms();
		struct timespec ts;

		if (cancelled(o))
			return false;
		if (left <= 0)
			return true;
		if (left > POLL_MS)
			left = POLL_MS;
		ts.tv_sec = left / 1000;
		ts.tv_nsec = (left % 1000) * 1000000;
		nanosleep(&ts, NULL);
	}
}

/* ---- the parsers -------------------------------------------------------- */

/* The {"status","data"} envelope; *root owns *data. */
static int
envelope(const char *body, size_t len, json_t **root, json_t **data, char *msg,
	 size_t msglen)
{
	json_error_t jerr;
	const char *status;
	char q[QUOTE_MAX + 8];

	*data = NULL;
	*root = json_loadb(body, len, 0, &jerr);
	if (*root == NULL) {
		say(msg, msglen, "the answer is not JSON: %s",
		    excerpt(jerr.text, strlen(jerr.text), 100, q, sizeof(q)));
		return STATUS_INVALID;
	}
	status = json_string_value(json_object_get(*root, "status"));
	if (status != NULL && strcmp(status, "error") == 0) {
		const char *type = json_string_value(
				   json_object_get(*root, "errorType")),
			   *text = json_string_value(
				   json_object_get(*root, "error"));

		say(msg, msglen, "%s: %s", type != NULL ? type : "error",
		    text != NULL ? excerpt(text, strlen(text), QUOTE_MAX, q,
					   sizeof(q))
				 : "no message");
		goto bad;
	}
	if (status == NULL || strcmp(status, "success") != 0) {
		say(msg, msglen,
		    "the answer is not a Prometheus API answer: no \"status\": "
		    "\"success\"");
		goto bad;
	}
	*data = json_object_get(*root, "data");
	if (*data == NULL) {
		say(msg, msglen, "the answer has no \"data\"");
		goto bad;
	}
	return STATUS_OK;
bad:
	json_decref(*root);
	*root = NULL;
	return STATUS_INVALID;
}

static void
names_free(struct grafana_names *n)
{
	if (n == NULL)
		return;
	for (size_t i = 0; i < n->n; i++)
		free((char *)n->v[i]);
	free((void *)n->v);
	free(n);
}

void
grafana_names_release(struct grafana_names *n)
{
	if (n != NULL && atomic_fetch_sub(&n->refs_, 1) == 1)
		names_free(n);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

bool
grafana_names_has(const struct grafana_names *n, const char *name)
{
	return n != NULL && n->n > 0 &&
	       bsearch(&name, n->v, n->n, sizeof(n->v[0]), cmp_str) != NULL;
}

int
grafana_parse_names(const char *body, size_t len, struct grafana_names **out,
		    char *msg, size_t msglen)
{
	json_t *root = NULL, *data;
	struct grafana_names *n = NULL;
	char **v = NULL;
	size_t count = 0;
	int rc;

	*out = NULL;
	rc = envelope(body, len, &root, &data, msg, msglen);
	if (rc != STATUS_OK)
		return rc;
	rc = STATUS_INVALID;
	if (!json_is_array(data)) {
		say(msg, msglen, "\"data\" is not an array of names");
		goto out;
	}
	if (json_array_size(data) > GRAFANA_MAX_NAMES) {
		say(msg, msglen, "%zu metric names: more than the %d kept",
		    json_array_size(data), GRAFANA_MAX_NAMES);
		rc = STATUS_LIMIT;
		goto out;
	}
	n = calloc(1, sizeof(*n));
	v = calloc(json_array_size(data) + 1, sizeof(*v));
	if (n == NULL || v == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < json_array_size(data); i++) {
		const char *s = json_string_value(json_array_get(data, i));

		if (s == NULL) {
			say(msg, msglen, "name %zu is not a string", i + 1);
			goto out;
		}
		v[count] = strdup(s);
		if (v[count] == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		count++;
	}
	qsort(v, count, sizeof(*v), cmp_str);
	n->v = (const char *const *)v;
	n->n = count;
	atomic_init(&n->refs_, 1);
	*out = n;
	n = NULL;
	v = NULL;
	rc = STATUS_OK;
out:
	if (v != NULL) {
		for (size_t i = 0; i < count; i++)
			free(v[i]);
		free(v);
	}
	free(n);
	json_decref(root);
	return rc;
}

static void
copy_field(char *dst, size_t cap, const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n;

	dst[0] = '\0';
	if (s == NULL)
		return;
	n = strlen(s);
	if (n >= cap) {
		/* cut at a character boundary */
		n = cap - 1;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(dst, s, n);
	dst[n] = '\0';
}

int
grafana_parse_metadata(const char *body, size_t len, const char *metric,
		       struct grafana_metadata *out, char *msg, size_t msglen)
{
	json_t *root = NULL, *data, *list, *first;
	int rc;

	memset(out, 0, sizeof(*out));
	rc = envelope(body, len, &root, &data, msg, msglen);
	if (rc != STATUS_OK)
		return rc;
	if (!json_is_object(data)) {
		say(msg, msglen, "\"data\" is not an object of metrics");
		json_decref(root);
		return STATUS_INVALID;
	}
	list = json_object_get(data, metric);
	first = json_array_get(list, 0);
	if (json_is_object(first)) {
		out->found = true;
		copy_field(out->type, sizeof(out->type),
			   json_object_get(first, "type"));
		copy_field(out->unit, sizeof(out->unit),
			   json_object_get(first, "unit"));
		copy_field(out->help, sizeof(out->help),
			   json_object_get(first, "help"));
	}
	json_decref(root);
	return STATUS_OK;
}

int
grafana_parse_datasource(const char *body, size_t len, char *uid, size_t cap,
			 char *msg, size_t msglen)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, 0, &jerr);
	const char *u, *type;
	char q[96];
	int rc = STATUS_INVALID;

	if (cap > 0)
		uid[0] = '\0';
	if (root == NULL) {
		say(msg, msglen, "the data source answer is not JSON: %s",
		    excerpt(jerr.text, strlen(jerr.text), 60, q, sizeof(q)));
		return STATUS_INVALID;
	}
	u = json_string_value(json_object_get(root, "uid"));
	type = json_string_value(json_object_get(root, "type"));
	if (u == NULL || u[0] == '\0' || type == NULL) {
		say(msg, msglen,
		    "the data source answer has no \"uid\" and \"type\"");
		goto out;
	}
	if (strstr(type, "prometheus") == NULL) {
		say(msg, msglen,
		    "the data source is of type \"%s\", not "
		    "prometheus",
		    excerpt(type, strlen(type), 60, q, sizeof(q)));
		rc = STATUS_UNSUPPORTED;
		goto out;
	}
	if (strlen(u) >= cap) {
		say(msg, msglen, "the data source uid is too long");
		goto out;
	}
	snprintf(uid, cap, "%s", u);
	rc = STATUS_OK;
out:
	json_decref(root);
	return rc;
}

void
grafana_matrix_free(struct grafana_matrix *m)
{
	if (m == NULL)
		return;
	for (size_t i = 0; i < m->nseries; i++) {
		struct grafana_series *s = &m->series[i];

		for (size_t j = 0; j < s->nlabels; j++) {
			free(s->labels[j].name);
			free(s->labels[j].value);
		}
		free(s->labels);
		free(s->points);
	}
	free(m->series);
	free(m->warning);
	free(m);
}

static int
cmp_label(const void *a, const void *b)
{
	return strcmp(((const struct grafana_label *)a)->name,
		      ((const struct grafana_label *)b)->name);
}

/* A sample: [<unix seconds>, "<value>"].  Prometheus writes values as
 * strings so that NaN and +-Inf survive JSON. */
static bool
parse_point(const json_t *p, struct grafana_point *out)
{
	const char *s = json_string_value(json_array_get(p, 1));
	double t = json_number_value(json_array_get(p, 0));
	char *end;

	if (!json_is_array(p) || json_array_size(p) != 2 ||
	    !json_is_number(json_array_get(p, 0)) || s == NULL || *s == '\0')
		return false;
	/* the year 33658 is far enough; keeps t * 1000 inside int64 */
	if (!isfinite(t) || t < 0 || t > 1e12)
		return false;
	errno = 0;
	out->v = strtod(s, &end);
	if (*end != '\0' || end == s)
		return false;
	out->t_ms = llround(t * 1000);
	return true;
}

static int
parse_series(const json_t *item, struct grafana_series *s, size_t index,
	     char *msg, size_t msglen)
{
	const json_t *metric = json_object_get(item, "metric"),
		     *values = json_object_get(item, "values"), *v;
	const char *key;
	size_t i = 0;

	if (!json_is_object(metric)) {
		say(msg, msglen, "series %zu has no \"metric\" object",
		    index + 1);
		return STATUS_INVALID;
	}
	if (json_object_size(metric) > GRAFANA_MAX_LABELS) {
		say(msg, msglen, "series %zu has %zu labels, more than %d",
		    index + 1, json_object_size(metric), GRAFANA_MAX_LABELS);
		return STATUS_INVALID;
	}
	s->labels = calloc(json_object_size(metric) + 1, sizeof(*s->labels));
	if (s->labels == NULL)
		return STATUS_NOMEM;
	json_object_foreach((json_t *)metric, key, v)
	{
		if (!json_is_string(v)) {
			say(msg, msglen,
			    "series %zu: label values must be strings",
			    index + 1);
			return STATUS_INVALID;
		}
		s->labels[i].name = strdup(key);
		s->labels[i].value = strdup(json_string_value(v));
		s->nlabels = ++i;
		if (s->labels[i - 1].name == NULL ||
		    s->labels[i - 1].value == NULL)
			return STATUS_NOMEM;
	}
	qsort(s->labels, s->nlabels, sizeof(*s->labels), cmp_label);
	s->points = calloc(json_array_size(values) + 1, sizeof(*s->points));
	if (s->points == NULL)
		return STATUS_NOMEM;
	for (i = 0; i < json_array_size(values); i++) {
		if (!parse_point(json_array_get(values, i), &s->points[i])) {
			say(msg, msglen,
			    "series %zu, point %zu is not [<seconds>, "
			    "\"<number>\"]",
			    index + 1, i + 1);
			return STATUS_INVALID;
		}
		if (i > 0 && s->points[i].t_ms <= s->points[i - 1].t_ms) {
			say(msg, msglen,
			    "series %zu, point %zu is not after the one "
			    "before",
			    index + 1, i + 1);
			return STATUS_INVALID;
		}
		s->npoints = i + 1;
	}
	return STATUS_OK;
}

int
grafana_parse_matrix(const char *body, size_t len, size_t max_points,
		     struct grafana_matrix **out, struct grafana_counts *total,
		     char *msg, size_t msglen)
{
	json_t *root = NULL, *data, *result, *warnings;
	struct grafana_matrix *m = NULL;
	const char *type;
	size_t points = 0;
	int rc;

	*out = NULL;
	if (total != NULL)
		*total = (struct grafana_counts){0, 0};
	rc = envelope(body, len, &root, &data, msg, msglen);
	if (rc != STATUS_OK)
		return rc;
	rc = STATUS_INVALID;
	type = json_string_value(json_object_get(data, "resultType"));
	result = json_object_get(data, "result");
	if (type == NULL || strcmp(type, "matrix") != 0 ||
	    !json_is_array(result)) {
		say(msg, msglen,
		    "the answer is not a range query's matrix (resultType "
		    "\"%s\")",
		    type != NULL ? (strlen(type) < 20 ? type : "?") : "none");
		goto out;
	}
	/* count first: a refusal must not cost the copies */
	for (size_t i = 0; i < json_array_size(result); i++) {
		const json_t *item = json_array_get(result, i),
			     *values = json_object_get(item, "values");

		if (!json_is_object(item) ||
		    (values != NULL && !json_is_array(values))) {
			say(msg, msglen,
			    "series %zu is not an object with a "
			    "\"values\" array",
			    i + 1);
			goto out;
		}
		points += json_array_size(values);
	}
	if (total != NULL)
		*total = (struct grafana_counts){json_array_size(result),
						 points};
	if (json_array_size(result) > GRAFANA_MAX_SERIES ||
	    points > max_points) {
		say(msg, msglen, "%zu series with %zu points: more than %s",
		    json_array_size(result), points,
		    points > max_points ? "the points allowed"
					: "the series allowed");
		rc = STATUS_LIMIT;
		goto out;
	}
	m = calloc(1, sizeof(*m));
	if (m == NULL || (m->series = calloc(json_array_size(result) + 1,
					     sizeof(*m->series))) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (size_t i = 0; i < json_array_size(result); i++) {
		m->nseries = i + 1;
		rc = parse_series(json_array_get(result, i), &m->series[i], i,
				  msg, msglen);
		if (rc != STATUS_OK)
			goto out;
		m->npoints += m->series[i].npoints;
	}
	warnings = json_object_get(root, "warnings");
	if (json_is_string(json_array_get(warnings, 0))) {
		const char *w = json_string_value(json_array_get(warnings, 0));
		char q[QUOTE_MAX + 8];

		m->warning =
			strdup(excerpt(w, strlen(w), QUOTE_MAX, q, sizeof(q)));
		if (m->warning == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
	}
	*out = m;
	m = NULL;
	rc = STATUS_OK;
out:
	grafana_matrix_free(m);
	json_decref(root);
	return rc;
}

/* ---- instance lifecycle ----------------------------------------------- */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;

static void
curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static int
check_config(const struct grafana_config *c, char *err, size_t errlen)
{
	const char *url = c->url != NULL ? c->url : "";
	bool has_uid = c->datasource_uid != NULL && c->datasource_uid[0],
	     has_name = c->datasource_name != NULL && c->datasource_name[0];

	if (strncmp(url, "http://", 7) != 0 &&
	    strncmp(url, "https://", 8) != 0) {
		say(err, errlen,
		    "url must start with http:// or https://, e.g. "
		    "\"https://grafana.example.com\"");
		return STATUS_INVALID;
	}
	if (strlen(url) > 400 || strpbrk(url, " \t\r\n?#") != NULL) {
		say(err, errlen,
		    "url must be a base URL of at most 400 bytes without "
		    "spaces, query or fragment");
		return STATUS_INVALID;
	}
	if (c->kind == GRAFANA_KIND_GRAFANA && has_uid == has_name) {
		say(err, errlen,
		    "set exactly one of datasource_uid and datasource_name: "
		    "the Prometheus data source queries go through");
		return STATUS_INVALID;
	}
	if (c->kind == GRAFANA_KIND_PROMETHEUS && (has_uid || has_name)) {
		say(err, errlen,
		    "datasource_uid and datasource_name are for Grafana "
		    "instances; a [prometheus.*] url is queried directly");
		return STATUS_INVALID;
	}
	if (c->token != NULL && c->token[0] && c->token_file != NULL &&
	    c->token_file[0]) {
		say(err, errlen, "set token or token_file, not both");
		return STATUS_INVALID;
	}
	if (c->token != NULL && c->token[0] &&
	    !token_ok(c->token, strlen(c->token))) {
		say(err, errlen,
		    "token must be printable ASCII without spaces");
		return STATUS_INVALID;
	}
	if (c->connect_timeout_ms <= 0 || c->timeout_ms <= 0 ||
	    c->max_response_bytes < 1024 || c->max_concurrent <= 0 ||
	    c->queue_timeout_ms < 0 || c->retries < 0 || c->retry_base_ms < 0 ||
	    c->breaker_failures <= 0 || c->breaker_cooldown_ms <= 0 ||
	    c->names_ttl_ms < 0 || c->metadata_ttl_ms < 0) {
		say(err, errlen,
		    "timeouts, max_concurrent, max_response_bytes (>= 1024) "
		    "and breaker_failures must be positive; the rest at "
		    "least 0");
		return STATUS_INVALID;
	}
	return STATUS_OK;
}

int
grafana_new(const struct grafana_config *cfg, const struct grafana_metrics *m,
	    struct grafana **out, char *err, size_t errlen)
{
	struct grafana *g = NULL;
	bool nomem = false;
	int rc;

	*out = NULL;
	rc = check_config(cfg, err, errlen);
	if (rc != STATUS_OK)
		return rc;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK) {
		say(err, errlen, "libcurl cannot start: %s",
		    curl_easy_strerror(curl_init_rc));
		return STATUS_IO;
	}
	g = calloc(1, sizeof(*g));
	if (g == NULL)
		return STATUS_NOMEM;
	{
		pthread_condattr_t attr;

		pthread_condattr_init(&attr);
		pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
		pthread_cond_init(&g->cv, &attr);
		pthread_condattr_destroy(&attr);
	}
	pthread_mutex_init(&g->mu, NULL);
	g->cfg = *cfg;
	g->name = dup_opt(cfg->name != NULL ? cfg->name : "default", &nomem);
	g->base = dup_opt(cfg->url, &nomem);
	g->ds_uid_cfg = dup_opt(cfg->datasource_uid, &nomem);
	g->ds_name_cfg = dup_opt(cfg->datasource_name, &nomem);
	g->token_cfg = dup_opt(cfg->token, &nomem);
	g->token_file = dup_opt(cfg->token_file, &nomem);
	g->ca_file = dup_opt(cfg->ca_file, &nomem);
	g->handles = calloc((size_t)cfg->max_concurrent, sizeof(*g->handles));
	g->free_slots =
		calloc((size_t)cfg->max_concurrent, sizeof(*g->free_slots));
	if (nomem || g->handles == NULL || g->free_slots == NULL) {
		grafana_free(g);
		return STATUS_NOMEM;
	}
	/* no trailing slash: paths start with one */
	while (strlen(g->base) > 8 && g->base[strlen(g->base) - 1] == '/')
		g->base[strlen(g->base) - 1] = '\0';
	g->cfg.name = g->name;
	g->cfg.url = g->base;
	g->cfg.datasource_uid = g->ds_uid_cfg;
	g->cfg.datasource_name = g->ds_name_cfg;
	g->cfg.token = g->token_cfg;
	g->cfg.token_file = g->token_file;
	g->cfg.ca_file = g->ca_file;
	for (int i = 0; i < cfg->max_concurrent; i++)
		g->free_slots[g->nfree++] = cfg->max_concurrent - 1 - i;
	if (m != NULL)
		g->m = *m;
	atomic_init(&g->rng,
		    (uint64_t)clock_mono_ms() ^ (uint64_t)(uintptr_t)g);
	expo_set(g->m.circuit_state, GRAFANA_BREAKER_CLOSED);
	*out = g;
	return STATUS_OK;
}

void
grafana_free(struct grafana *g)
{
	if (g == NULL)
		return;
	for (int i = 0; g->handles != NULL && i < g->cfg.max_concurrent; i++)
		if (g->handles[i] != NULL)
			curl_easy_cleanup(g->handles[i]);
	pthread_mutex_destroy(&g->mu);
	pthread_cond_destroy(&g->cv);
	for (size_t i = 0; i < GRAFANA_METADATA_CACHE; i++)
		free(g->meta[i].metric);
	grafana_names_release(g->names);
	if (g->token_file_value != NULL)
		explicit_bzero(g->token_file_value,
			       strlen(g->token_file_value));
	free(g->token_file_value);
	if (g->token_cfg != NULL)
		explicit_bzero(g->token_cfg, strlen(g->token_cfg));
	free(g->token_cfg);
	free(g->handles);
	free(g->free_slots);
	free(g->name);
	free(g->base);
	free(g->ds_uid_cfg);
	free(g->ds_name_cfg);
	free(g->token_file);
	free(g->ca_file);
	free(g->ds_uid);
	free(g);
}

const char *
grafana_name(const struct grafana *g)
{
	return g->name;
}

const char *
grafana_url(const struct grafana *g)
{
	return g->base;
}

enum grafana_kind
grafana_kind(const struct grafana *g)
{
	return g->cfg.kind;
}

const char *
grafana_breaker_name(enum grafana_breaker b)
{
	switch (b) {
	case GRAFANA_BREAKER_CLOSED: return "closed";
	case GRAFANA_BREAKER_HALF_OPEN: return "half-open";
	case GRAFANA_BREAKER_OPEN: return "open";
	}
	return "unknown";
}

/* ---- circuit breaker ---------------------------------------------------- */

static void
set_state(struct grafana *g, enum grafana_breaker s)
{
	g->state = s;
	expo_set(g->m.circuit_state, s);
}

enum grafana_breaker
grafana_breaker_state(struct grafana *g)
{
	enum grafana_breaker s;

	pthread_mutex_lock(&g->mu);
	/* an open breaker past its cool-down admits the next request */
	s = g->state == GRAFANA_BREAKER_OPEN &&
			    clock_mono_ms() >= g->open_until_ms
		    ? GRAFANA_BREAKER_HALF_OPEN
		    : g->state;
	pthread_mutex_unlock(&g->mu);
	return s;
}

/* The breaker's state for a message: "closed (2 consecutive failures of
 * 5)", "open ..." */
static void
breaker_text(struct grafana *g, char *buf, size_t cap)
{
	int64_t left;

	switch (g->state) {
	case GRAFANA_BREAKER_CLOSED:
		say(buf, cap,
		    "circuit breaker closed (%d consecutive failure%s of the "
		    "%d "
		    "that open it)",
		    g->failures, g->failures == 1 ? "" : "s",
		    g->cfg.breaker_failures);
		break;
	case GRAFANA_BREAKER_HALF_OPEN:
		say(buf, cap,
		    "circuit breaker half-open (one trial request is let "
		    "through)");
		break;
	case GRAFANA_BREAKER_OPEN:
		left = g->open_until_ms - clock_mono_ms();
		say(buf, cap,
		    "circuit breaker open after %d consecutive failures: no "
		    "request is sent for another %" PRId64 " s",
		    g->failures, left > 0 ? (left + 999) / 1000 : 0);
		break;
	}
}

static int
breaker_admit(struct grafana *g, bool *probe, struct grafana_error *err)
{
	char state[256];
	int rc = STATUS_OK;

	*probe = false;
	pthread_mutex_lock(&g->mu);
	if (g->state == GRAFANA_BREAKER_OPEN &&
	    clock_mono_ms() >= g->open_until_ms) {
		set_state(g, GRAFANA_BREAKER_HALF_OPEN);
		g->probe_out = false;
	}
	if (g->state == GRAFANA_BREAKER_OPEN ||
	    (g->state == GRAFANA_BREAKER_HALF_OPEN && g->probe_out)) {
		breaker_text(g, state, sizeof(state));
		err->kind = GRAFANA_FAIL_UNAVAILABLE;
		err->breaker = g->state;
		say(err->client, sizeof(err->client),
		    "%s instance \"%s\" at %s is failing: %s%s",
		    g->cfg.kind == GRAFANA_KIND_GRAFANA ? "Grafana"
							: "Prometheus",
		    g->name, g->base, state,
		    g->state == GRAFANA_BREAKER_HALF_OPEN
			    ? "; a trial request is under way"
			    : "");
		say(err->detail, sizeof(err->detail), "%s", state);
		rc = STATUS_IO;
	} else if (g->state == GRAFANA_BREAKER_HALF_OPEN) {
		g->probe_out = true;
		*probe = true;
	}
	pthread_mutex_unlock(&g->mu);
	return rc;
}

enum outcome {
	OUT_REACHED, /* an HTTP answer below 500 */
	OUT_FAILED,  /* connection error, 5xx, timeout */
	OUT_NEUTRAL, /* cancelled, or nothing was sent */
};

static void
breaker_record(struct grafana *g, bool probe, enum outcome o,
	       const struct grafana_opts *opts)
{
	struct log_fields f;
	bool opened = false, closed = false;

	fields_of(opts, &f);
	pthread_mutex_lock(&g->mu);
	if (probe)
		g->probe_out = false;
	if (o == OUT_REACHED) {
		g->failures = 0;
		if (g->state != GRAFANA_BREAKER_CLOSED) {
			set_state(g, GRAFANA_BREAKER_CLOSED);
			closed = true;
		}
	} else if (o == OUT_FAILED) {
		g->failures++;
		if (g->state == GRAFANA_BREAKER_HALF_OPEN ||
		    (g->state == GRAFANA_BREAKER_CLOSED &&
		     g->failures >= g->cfg.breaker_failures)) {
			set_state(g, GRAFANA_BREAKER_OPEN);
			g->open_until_ms =
				clock_mono_ms() + g->cfg.breaker_cooldown_ms;
			expo_inc(g->m.circuit_opens);
			opened = true;
		}
	}
	pthread_mutex_unlock(&g->mu);
	if (opened)
		log_warn(&f,
			 "metrics instance \"%s\": circuit breaker open after "
			 "%d consecutive failures; next try in %d ms",
			 g->name, g->cfg.breaker_failures,
			 g->cfg.breaker_cooldown_ms);
	if (closed)
		log_info(&f,
			 "metrics instance \"%s\": answers again, circuit "
			 "breaker closed",
			 g->name);
}

/* ---- slots -------------------------------------------------------------- */

static int
slot_acquire(struct grafana *g, const struct grafana_opts *o, int *slot,
	     struct grafana_error *err)
{
	int64_t until = clock_mono_ms() + g->cfg.queue_timeout_ms;
	int rc = STATUS_OK;

	*slot = -1;
	if (o != NULL && o->deadline_ms > 0 && o->deadline_ms < until)
		until = o->deadline_ms;
	pthread_mutex_lock(&g->mu);
	g->waiting++;
	expo_set(g->m.waiting, g->waiting);
	while (g->nfree == 0) {
		int64_t now = clock_mono_ms(), wake;
		struct timespec ts;

		if (cancelled(o)) {
			rc = STATUS_CANCELLED;
			break;
		}
		if (now >= until) {
			rc = STATUS_TIMEOUT;
			break;
		}
		wake = now + POLL_MS < until ? now + POLL_MS : until;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (wake - now) / 1000;
		ts.tv_nsec += ((wake - now) % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&g->cv, &g->mu, &ts);
	}
	g->waiting--;
	expo_set(g->m.waiting, g->waiting);
	if (rc == STATUS_OK) {
		*slot = g->free_slots[--g->nfree];
		g->inflight++;
		expo_set(g->m.inflight, g->inflight);
	}
	pthread_mutex_unlock(&g->mu);
	if (rc == STATUS_TIMEOUT) {
		err->kind = GRAFANA_FAIL_UNAVAILABLE;
		say(err->client, sizeof(err->client),
		    "instance \"%s\" is busy: %d queries are running and no "
		    "slot freed within %d ms; try again shortly, or raise "
		    "max_concurrent",
		    g->name, g->cfg.max_concurrent, g->cfg.queue_timeout_ms);
		say(err->detail, sizeof(err->detail),
		    "every slot busy for %d ms", g->cfg.queue_timeout_ms);
		rc = STATUS_IO;
	} else if (rc == STATUS_CANCELLED) {
		err->kind = GRAFANA_FAIL_CANCELLED;
		say(err->client, sizeof(err->client), "the call was cancelled");
	}
	return rc;
}

static void
slot_release(struct grafana *g, int slot)
{
	pthread_mutex_lock(&g->mu);
	g->free_slots[g->nfree++] = slot;
	g->inflight--;
	expo_set(g->m.inflight, g->inflight);
	pthread_cond_signal(&g->cv);
	pthread_mutex_unlock(&g->mu);
}

/* ---- the token ---------------------------------------------------------- */

/* Reads token_file when it changed (inode, size or mtime) since the last
 * read; g->mu held. */
static int
token_refresh(struct grafana *g, struct grafana_error *err)
{
	char buf[GRAFANA_MAX_TOKEN_BYTES + 1];
	struct stat st;
	ssize_t n = 0, got;
	size_t start = 0, end;
	char *v;
	int fd;

	if (stat(g->token_file, &st) != 0)
		goto io;
	if (g->tok_loaded && st.st_ino == g->tok_ino &&
	    st.st_size == g->tok_size &&
	    st.st_mtim.tv_sec == g->tok_mtime.tv_sec &&
	    st.st_mtim.tv_nsec == g->tok_mtime.tv_nsec)
		return STATUS_OK;
	fd = open(g->token_file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto io;
	while ((size_t)n < sizeof(buf) &&
	       (got = read(fd, buf + n, sizeof(buf) - (size_t)n)) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			goto io;
		}
		n += got;
	}
	close(fd);
	end = (size_t)n;
	while (start < end && strchr(" \t\r\n", buf[start]) != NULL)
		start++;
	while (end > start && strchr(" \t\r\n", buf[end - 1]) != NULL)
		end--;
	if ((size_t)n > GRAFANA_MAX_TOKEN_BYTES ||
	    !token_ok(buf + start, end - start)) {
		err->kind = GRAFANA_FAIL_REFUSED;
		say(err->client, sizeof(err->client),
		    "the token file of instance \"%s\" does not hold a token "
		    "(one line of printable ASCII, at most %d bytes); see the "
		    "server log",
		    g->name, GRAFANA_MAX_TOKEN_BYTES);
		say(err->detail, sizeof(err->detail),
		    "token_file %s: empty, too long or not printable ASCII",
		    g->token_file);
		explicit_bzero(buf, sizeof(buf));
		return STATUS_INVALID;
	}
	v = strndup(buf + start, end - start);
	explicit_bzero(buf, sizeof(buf));
	if (v == NULL)
		return STATUS_NOMEM;
	if (g->token_file_value != NULL)
		explicit_bzero(g->token_file_value,
			       strlen(g->token_file_value));
	free(g->token_file_value);
	g->token_file_value = v;
	g->tok_ino = st.st_ino;
	g->tok_size = st.st_size;
	g->tok_mtime = st.st_mtim;
	g->tok_loaded = true;
	return STATUS_OK;
io:
	err->kind = GRAFANA_FAIL_REFUSED;
	say(err->client, sizeof(err->client),
	    "the token file of instance \"%s\" cannot be read; see the "
	    "server log",
	    g->name);
	say(err->detail, sizeof(err->detail), "token_file %s: %s",
	    g->token_file, strerror(errno));
	return STATUS_IO;
}

/* The Authorization header line into hdr (cap bytes), or "" without a
 * token. */
static int
auth_header(struct grafana *g, char *hdr, size_t cap, struct grafana_error *err)
{
	const char *tok = NULL;
	int rc = STATUS_OK;

	hdr[0] = '\0';
	pthread_mutex_lock(&g->mu);
	if (g->token_file != NULL) {
		rc = token_refresh(g, err);
		tok = g->token_file_value;
	} else {
		tok = g->token_cfg;
	}
	if (rc == STATUS_OK && tok != NULL &&
	    (size_t)snprintf(hdr, cap, "Authorization: Bearer %s", tok) >= cap)
		rc = STATUS_LIMIT;
	pthread_mutex_unlock(&g->mu);
	return rc;
}

/* ---- one HTTP exchange -------------------------------------------------- */

struct xfer {
	struct buf body;
	bool too_large;
	const struct grafana_opts *o;
};

/* What an upstream's error answer says: Prometheus's "errorType: error",
 * Grafana's "message", or else an excerpt of the body. */
static void
answer_text(const char *body, size_t len, char *out, size_t cap)
{
	json_error_t jerr;
	json_t *root = body != NULL ? json_loadb(body, len, 0, &jerr) : NULL;
	const char *type = json_string_value(
			   json_object_get(root, "errorType")),
		   *text = json_string_value(json_object_get(root, "error")),
		   *msg = json_string_value(json_object_get(root, "message"));
	char q[QUOTE_MAX + 8];

	if (text != NULL)
		say(out, cap, "%s%s%s", type != NULL ? type : "",
		    type != NULL ? ": " : "",
		    excerpt(text, strlen(text), QUOTE_MAX, q, sizeof(q)));
	else if (msg != NULL)
		say(out, cap, "%s",
		    excerpt(msg, strlen(msg), QUOTE_MAX, q, sizeof(q)));
	else
		excerpt(body != NULL ? body : "", len, 200, out, cap);
	json_decref(root);
}

static size_t
on_write(char *p, size_t size, size_t n, void *arg)
{
	struct xfer *x = arg;

	if (buf_append(&x->body, p, size * n) != STATUS_OK) {
		x->too_large = true;
		return 0;
	}
	return size * n;
}

static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
	    curl_off_t ulnow)
{
	struct xfer *x = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return cancelled(x->o) ? 1 : 0;
}

static CURLcode
perform(struct grafana *g, CURL *h, const char *url, const char *form,
	const char *auth, long timeout_ms, struct xfer *x, long *http,
	bool *connected, char *curl_err)
{
	struct curl_slist *hdrs = NULL, *t;
	CURLcode rc;
	curl_off_t connect_us = 0, pretransfer_us = 0;

	*http = 0;
	*connected = false;
	curl_err[0] = '\0';
	curl_easy_reset(h); /* keeps the connection cache */
	t = curl_slist_append(hdrs, "Accept: application/json");
	if (t != NULL)
		hdrs = t;
	if (t != NULL && auth[0] != '\0') {
		t = curl_slist_append(hdrs, auth);
		if (t != NULL)
			hdrs = t;
	}
	if (t == NULL) {
		curl_slist_free_all(hdrs);
		return CURLE_OUT_OF_MEMORY;
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	/* a redirect would carry the token elsewhere: never followed */
	curlx_secure(h, g->ca_file);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)g->cfg.connect_timeout_ms < timeout_ms
				 ? (long)g->cfg.connect_timeout_ms
				 : timeout_ms);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, "");
	curl_easy_setopt(h, CURLOPT_USERAGENT, "sextant/" SEXTANT_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
	if (form != NULL)
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, form);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, http);
	curl_easy_getinfo(h, CURLINFO_CONNECT_TIME_T, &connect_us);
	curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us);
	*connected = connect_us > 0 || pretransfer_us > 0 || *http > 0;
	/* the header list holds the token: the handle must not keep it */
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	for (t = hdrs; t != NULL; t = t->next)
		explicit_bzero(t->data, strlen(t->data));
	curl_slist_free_all(hdrs);
	if (curl_err[0] == '\0')
		snprintf(curl_err, CURL_ERROR_SIZE, "%s",
			 curl_easy_strerror(rc));
	return rc;
}

static bool
connection_error(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE: return true;
	default: return false;
	}
}

/*
 * GET (form NULL) or POST of form to base + path (+ "?" + query), with
 * the breaker, a slot and the retries.  On STATUS_OK *body holds a 2xx
 * answer (caller frees with buf_free).
 */
static int
request(struct grafana *g, const struct grafana_opts *o, const char *path,
	const char *query, const char *form, struct buf *body,
	struct grafana_error *err)
{
	char auth[GRAFANA_MAX_TOKEN_BYTES + 64], curl_err[CURL_ERROR_SIZE];
	char state[256], q[QUOTE_MAX + 8], why[CURL_ERROR_SIZE + 64];
	struct buf url;
	struct xfer x = {.o = o};
	struct log_fields f;
	enum outcome outcome = OUT_NEUTRAL;
	int slot = -1, attempt = 0, rc;
	bool probe = false;
	long http = 0;

	fields_of(o, &f);
	buf_init(&url, URL_BUF_MAX);
	buf_init(&x.body, g->cfg.max_response_bytes);
	auth[0] = '\0';
	if (buf_printf(&url, "%s%s", g->base, path) != STATUS_OK) {
		rc = STATUS_NOMEM;
		goto out;
	}
	excerpt(url.data, url.len, sizeof(err->url) - 8, err->url,
		sizeof(err->url));
	if (query != NULL && buf_printf(&url, "?%s", query) != STATUS_OK) {
		rc = STATUS_NOMEM;
		goto out;
	}
	rc = breaker_admit(g, &probe, err);
	if (rc != STATUS_OK)
		goto out;
	rc = slot_acquire(g, o, &slot, err);
	if (rc != STATUS_OK)
		goto out;
	if (g->handles[slot] == NULL &&
	    (g->handles[slot] = curl_easy_init()) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	for (;;) {
		int64_t now = clock_mono_ms();
		long budget = g->cfg.timeout_ms;
		bool connected;
		CURLcode cc;

		if (o != NULL && o->deadline_ms > 0) {
			if (o->deadline_ms - now < budget)
				budget = (long)(o->deadline_ms - now);
			if (budget <= 0) {
				err->kind = GRAFANA_FAIL_UNAVAILABLE;
				say(err->client, sizeof(err->client),
				    "the call's time ran out before %s "
				    "answered",
				    err->url);
				say(err->detail, sizeof(err->detail),
				    "deadline passed after %d attempts",
				    attempt);
				outcome =
					attempt > 0 ? OUT_FAILED : OUT_NEUTRAL;
				rc = STATUS_IO;
				break;
			}
		}
		rc = auth_header(g, auth, sizeof(auth), err);
		if (rc != STATUS_OK) {
			if (rc == STATUS_LIMIT ||
			    err->kind == GRAFANA_FAIL_NONE) {
				err->kind = GRAFANA_FAIL_REFUSED;
				say(err->client, sizeof(err->client),
				    "the token of instance \"%s\" is too long",
				    g->name);
			}
			rc = rc == STATUS_NOMEM ? STATUS_NOMEM : STATUS_INVALID;
			break;
		}
		buf_reset(&x.body);
		x.too_large = false;
		cc = perform(g, g->handles[slot], url.data, form, auth, budget,
			     &x, &http, &connected, curl_err);
		explicit_bzero(auth, sizeof(auth));
		err->http_status = (int)http;
		if (cc == CURLE_OK && http >= 200 && http < 300) {
			expo_inc(g->m.requests_ok);
			outcome = OUT_REACHED;
			rc = STATUS_OK;
			break;
		}
		if (cc == CURLE_ABORTED_BY_CALLBACK || cancelled(o)) {
			err->kind = GRAFANA_FAIL_CANCELLED;
			say(err->client, sizeof(err->client),
			    "the call was cancelled");
			rc = STATUS_CANCELLED;
			break;
		}
		if (cc == CURLE_WRITE_ERROR && x.too_large) {
			expo_inc(g->m.requests_ok);
			outcome = OUT_REACHED;
			err->kind = GRAFANA_FAIL_BAD_RESPONSE;
			say(err->client, sizeof(err->client),
			    "the answer of %s is larger than %zu bytes "
			    "(max_response_bytes): narrow the query (shorter "
			    "range, larger step, filters or an aggregation)",
			    err->url, g->cfg.max_response_bytes);
			say(err->detail, sizeof(err->detail),
			    "response over %zu bytes",
			    g->cfg.max_response_bytes);
			rc = STATUS_INVALID;
			break;
		}
		if (cc == CURLE_OK && http < 500) {
			const char *who = g->cfg.kind == GRAFANA_KIND_GRAFANA
						  ? "Grafana"
						  : "Prometheus";
			char pmsg[QUOTE_MAX + 64];

			expo_inc(g->m.requests_ok);
			outcome = OUT_REACHED;
			answer_text(x.body.data, x.body.len, pmsg,
				    sizeof(pmsg));
			say(err->detail, sizeof(err->detail), "HTTP %ld: %s",
			    http, pmsg);
			rc = STATUS_INVALID;
			if (http == 400 || http == 422) {
				err->kind = GRAFANA_FAIL_QUERY;
				say(err->client, sizeof(err->client),
				    "Prometheus refused the query (HTTP %ld): "
				    "%s",
				    http, pmsg);
			} else if (http == 401 || http == 403) {
				err->kind = GRAFANA_FAIL_REFUSED;
				say(err->client, sizeof(err->client),
				    "%s at %s refused the credentials (HTTP "
				    "%ld: %s): check token / token_file of "
				    "instance \"%s\" and the token's "
				    "permissions",
				    who, err->url, http, pmsg, g->name);
			} else if (http == 404) {
				err->kind = GRAFANA_FAIL_REFUSED;
				say(err->client, sizeof(err->client),
				    "%s has no %s (HTTP 404: %s): check url%s "
				    "of instance \"%s\"",
				    who, err->url, pmsg,
				    g->cfg.kind == GRAFANA_KIND_GRAFANA
					    ? " and the data source"
					    : "",
				    g->name);
				/* a data source renamed or re-created gets
				 * looked up again */
				pthread_mutex_lock(&g->mu);
				free(g->ds_uid);
				g->ds_uid = NULL;
				pthread_mutex_unlock(&g->mu);
			} else if (http >= 300 && http < 400) {
				err->kind = GRAFANA_FAIL_REFUSED;
				say(err->client, sizeof(err->client),
				    "%s redirects (HTTP %ld), which is not "
				    "followed: set url of instance \"%s\" to "
				    "the final address",
				    err->url, http, g->name);
			} else {
				err->kind = GRAFANA_FAIL_REFUSED;
				say(err->client, sizeof(err->client),
				    "%s answered HTTP %ld: %s", err->url, http,
				    pmsg);
			}
			break;
		}
		/* no answer, or 5xx */
		expo_inc(g->m.requests_failed);
		outcome = OUT_FAILED;
		if (cc == CURLE_OK) {
			say(why, sizeof(why), "HTTP %ld: %s", http,
			    excerpt(x.body.data != NULL ? x.body.data : "",
				    x.body.len, 120, q, sizeof(q)));
		} else if (cc == CURLE_OPERATION_TIMEDOUT && connected) {
			say(why, sizeof(why),
			    "no answer within %ld ms (timeout_ms)", budget);
		} else {
			say(why, sizeof(why), "%s", curl_err);
		}
		attempt++;
		if ((cc == CURLE_OK || connection_error(cc) ||
		     (cc == CURLE_OPERATION_TIMEDOUT && !connected)) &&
		    attempt <= g->cfg.retries) {
			int64_t d = (int64_t)g->cfg.retry_base_ms
				    << (attempt - 1 < 20 ? attempt - 1 : 20);

			if (d > MAX_BACKOFF_MS)
				d = MAX_BACKOFF_MS;
			d = d / 2 + (d > 1 ? (int64_t)(rng_next(g) %
						       (uint64_t)(d / 2 + 1))
					   : 0);
			log_debug(&f,
				  "metrics instance \"%s\": %s: %s; retry %d "
				  "of %d in %" PRId64 " ms",
				  g->name, err->url, why, attempt,
				  g->cfg.retries, d);
			expo_inc(g->m.retries);
			if (o != NULL && o->deadline_ms > 0 &&
			    clock_mono_ms() + d >= o->deadline_ms)
				d = 0; /* the loop ends on the deadline */
			if (!nap(o, d)) {
				err->kind = GRAFANA_FAIL_CANCELLED;
				say(err->client, sizeof(err->client),
				    "the call was cancelled");
				outcome = OUT_NEUTRAL;
				rc = STATUS_CANCELLED;
				break;
			}
			continue;
		}
		err->kind = GRAFANA_FAIL_UNAVAILABLE;
		say(err->detail, sizeof(err->detail), "%s after %d attempt%s",
		    why, attempt, attempt == 1 ? "" : "s");
		rc = STATUS_IO;
		break;
	}
out:
	if (slot >= 0)
		slot_release(g, slot);
	breaker_record(g, probe, outcome, o);
	if (rc == STATUS_IO && err->client[0] == '\0') {
		pthread_mutex_lock(&g->mu);
		breaker_text(g, state, sizeof(state));
		err->breaker = g->state;
		pthread_mutex_unlock(&g->mu);
		say(err->client, sizeof(err->client),
		    "%s instance \"%s\" did not answer at %s: %s; %s",
		    g->cfg.kind == GRAFANA_KIND_GRAFANA ? "Grafana"
							: "Prometheus",
		    g->name, err->url, err->detail, state);
	} else {
		err->breaker = grafana_breaker_state(g);
	}
	if (rc == STATUS_NOMEM && err->kind == GRAFANA_FAIL_NONE) {
		err->kind = GRAFANA_FAIL_UNAVAILABLE;
		say(err->client, sizeof(err->client), "out of memory");
	}
	if (rc != STATUS_OK && rc != STATUS_CANCELLED && slot >= 0)
		log_info(&f, "metrics instance \"%s\": %s (%s)", g->name,
			 err->client, err->detail);
	else if (rc != STATUS_OK && rc != STATUS_CANCELLED)
		log_debug(&f, "metrics instance \"%s\": %s", g->name,
			  err->client);
	if (rc == STATUS_OK) {
		*body = x.body;
		memset(&x.body, 0, sizeof(x.body));
	}
	buf_free(&x.body);
	buf_free(&url);
	return rc;
}

/* ---- data source, then the API calls ----------------------------------- */

/* The path prefix of Prometheus's API on this instance into prefix. */
static int
api_prefix(struct grafana *g, const struct grafana_opts *o, struct buf *prefix,
	   struct grafana_error *err)
{
	struct buf path, body = {0};
	char uid[256], msg[256];
	int rc;

	if (g->cfg.kind == GRAFANA_KIND_PROMETHEUS)
		return STATUS_OK;
	pthread_mutex_lock(&g->mu);
	rc = g->ds_uid != NULL ? STATUS_OK : STATUS_NOTFOUND;
	if (rc == STATUS_OK)
		snprintf(uid, sizeof(uid), "%s", g->ds_uid);
	pthread_mutex_unlock(&g->mu);
	if (rc != STATUS_OK) {
		buf_init(&path, URL_BUF_MAX);
		buf_puts(&path, g->ds_uid_cfg != NULL
					? "/api/datasources/uid/"
					: "/api/datasources/name/");
		pct_encode(&path, g->ds_uid_cfg != NULL ? g->ds_uid_cfg
							: g->ds_name_cfg);
		rc = buf_error(&path);
		if (rc == STATUS_OK)
			rc = request(g, o, path.data, NULL, NULL, &body, err);
		buf_free(&path);
		if (rc == STATUS_OK) {
			rc = grafana_parse_datasource(body.data, body.len, uid,
						      sizeof(uid), msg,
						      sizeof(msg));
			if (rc != STATUS_OK) {
				err->kind = rc == STATUS_UNSUPPORTED
						    ? GRAFANA_FAIL_REFUSED
						    : GRAFANA_FAIL_BAD_RESPONSE;
				say(err->client, sizeof(err->client),
				    "data source \"%s\" of Grafana instance "
				    "\"%s\" cannot be used: %s",
				    g->ds_uid_cfg != NULL ? g->ds_uid_cfg
							  : g->ds_name_cfg,
				    g->name, msg);
				say(err->detail, sizeof(err->detail), "%s",
				    msg);
				rc = STATUS_INVALID;
			}
		}
		buf_free(&body);
		if (rc != STATUS_OK)
			return rc;
		pthread_mutex_lock(&g->mu);
		free(g->ds_uid);
		g->ds_uid = strdup(uid);
		pthread_mutex_unlock(&g->mu);
	}
	buf_puts(prefix, "/api/datasources/proxy/uid/");
	pct_encode(prefix, uid);
	return buf_error(prefix) == STATUS_OK ? STATUS_OK : STATUS_NOMEM;
}

/* GET or POST of Prometheus's API path (after the prefix). */
static int
api_call(struct grafana *g, const struct grafana_opts *o, const char *api,
	 const char *query, const char *form, struct buf *body,
	 struct grafana_error *err)
{
	struct buf path;
	int rc;

	buf_init(&path, URL_BUF_MAX);
	rc = api_prefix(g, o, &path, err);
	if (rc == STATUS_OK && buf_puts(&path, api) != STATUS_OK)
		rc = STATUS_NOMEM;
	if (rc == STATUS_OK)
		rc = request(g, o, path.data, query, form, body, err);
	buf_free(&path);
	return rc;
}

static int
bad_answer(struct grafana *g, int rc, const char *msg,
	   struct grafana_error *err)
{
	if (rc == STATUS_NOMEM)
		return rc;
	err->kind = GRAFANA_FAIL_BAD_RESPONSE;
	say(err->client, sizeof(err->client),
	    "instance \"%s\" gave an answer that cannot be used from %s: %s",
	    g->name, err->url, msg);
	say(err->detail, sizeof(err->detail), "%s", msg);
	return STATUS_INVALID;
}

int
grafana_metric_names(struct grafana *g, const struct grafana_opts *o,
		     int64_t max_age_ms, struct grafana_names **out,
		     struct grafana_error *err)
{
	struct grafana_names *n = NULL;
	struct buf body = {0};
	int64_t limit = g->cfg.names_ttl_ms;
	char msg[512];
	int rc;

	*out = NULL;
	memset(err, 0, sizeof(*err));
	if (max_age_ms >= 0 && max_age_ms < limit)
		limit = max_age_ms;
	pthread_mutex_lock(&g->mu);
	if (g->names != NULL &&
	    clock_mono_ms() - g->names->fetched_ms <= limit) {
		atomic_fetch_add(&g->names->refs_, 1);
		*out = g->names;
	}
	pthread_mutex_unlock(&g->mu);
	if (*out != NULL) {
		expo_inc(g->m.names_hits);
		return STATUS_OK;
	}
	expo_inc(g->m.names_misses);
	rc = api_call(g, o, "/api/v1/label/__name__/values", NULL, NULL, &body,
		      err);
	if (rc != STATUS_OK)
		return rc;
	rc = grafana_parse_names(body.data, body.len, &n, msg, sizeof(msg));
	buf_free(&body);
	if (rc != STATUS_OK)
		return bad_answer(g, rc, msg, err);
	n->fetched_ms = clock_mono_ms();
	atomic_fetch_add(&n->refs_, 1); /* one for the cache, one for out */
	pthread_mutex_lock(&g->mu);
	grafana_names_release(g->names);
	g->names = n;
	pthread_mutex_unlock(&g->mu);
	*out = n;
	return STATUS_OK;
}

int
grafana_metric_metadata(struct grafana *g, const struct grafana_opts *o,
			const char *metric, struct grafana_metadata *out,
			struct grafana_error *err)
{
	struct buf query, body = {0};
	size_t slot = 0;
	char msg[512];
	bool hit = false;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(err, 0, sizeof(*err));
	pthread_mutex_lock(&g->mu);
	for (size_t i = 0; i < GRAFANA_METADATA_CACHE; i++) {
		struct meta_entry *e = &g->meta[i];

		if (e->metric != NULL && strcmp(e->metric, metric) == 0 &&
		    clock_mono_ms() - e->fetched_ms <= g->cfg.metadata_ttl_ms) {
			*out = e->md;
			hit = true;
			break;
		}
	}
	pthread_mutex_unlock(&g->mu);
	if (hit) {
		expo_inc(g->m.meta_hits);
		return STATUS_OK;
	}
	expo_inc(g->m.meta_misses);
	buf_init(&query, URL_BUF_MAX);
	buf_puts(&query, "metric=");
	pct_encode(&query, metric);
	rc = buf_error(&query) == STATUS_OK ? STATUS_OK : STATUS_NOMEM;
	if (rc == STATUS_OK)
		rc = api_call(g, o, "/api/v1/metadata", query.data, NULL, &body,
			      err);
	buf_free(&query);
	if (rc != STATUS_OK)
		return rc;
	rc = grafana_parse_metadata(body.data, body.len, metric, out, msg,
				    sizeof(msg));
	buf_free(&body);
	if (rc != STATUS_OK)
		return bad_answer(g, rc, msg, err);
	pthread_mutex_lock(&g->mu);
	/* the same metric's stale entry, a free one, or the oldest */
	for (size_t i = 0; i < GRAFANA_METADATA_CACHE; i++) {
		struct meta_entry *e = &g->meta[i];

		if (e->metric != NULL && strcmp(e->metric, metric) == 0) {
			slot = i;
			break;
		}
		if (e->metric == NULL ||
		    (g->meta[slot].metric != NULL &&
		     e->fetched_ms < g->meta[slot].fetched_ms))
			slot = i;
	}
	if (g->meta[slot].metric == NULL ||
	    strcmp(g->meta[slot].metric, metric) != 0) {
		char *copy = strdup(metric);

		if (copy != NULL) {
			free(g->meta[slot].metric);
			g->meta[slot].metric = copy;
		}
	}
	if (g->meta[slot].metric != NULL &&
	    strcmp(g->meta[slot].metric, metric) == 0) {
		g->meta[slot].md = *out;
		g->meta[slot].fetched_ms = clock_mono_ms();
	}
	pthread_mutex_unlock(&g->mu);
	return STATUS_OK;
}

/* Unix ms as Prometheus's seconds with a fraction: "1700000000.5". */
static void
add_seconds(struct buf *b, const char *key, int64_t ms)
{
	int64_t s = ms / 1000, frac = ms % 1000;

	if (frac < 0) {
		s--;
		frac += 1000;
	}
	if (frac != 0)
		buf_printf(b, "&%s=%" PRId64 ".%03" PRId64, key, s, frac);
	else
		buf_printf(b, "&%s=%" PRId64, key, s);
}

int
grafana_query_range(struct grafana *g, const struct grafana_opts *o,
		    const char *promql, int64_t start_ms, int64_t end_ms,
		    int64_t step_ms, size_t max_points,
		    struct grafana_matrix **out, struct grafana_counts *total,
		    struct grafana_error *err)
{
	struct buf form, body = {0};
	char msg[512];
	int rc;

	*out = NULL;
	if (total != NULL)
		*total = (struct grafana_counts){0, 0};
	memset(err, 0, sizeof(*err));
	buf_init(&form, URL_BUF_MAX * 4);
	buf_puts(&form, "query=");
	pct_encode(&form, promql);
	add_seconds(&form, "start", start_ms);
	add_seconds(&form, "end", end_ms);
	add_seconds(&form, "step", step_ms);
	if ((rc = buf_error(&form)) != STATUS_OK) {
		buf_free(&form);
		err->kind = GRAFANA_FAIL_QUERY;
		say(err->client, sizeof(err->client),
		    "the query is too long to send");
		return rc == STATUS_NOMEM ? rc : STATUS_INVALID;
	}
	rc = api_call(g, o, "/api/v1/query_range", NULL, form.data, &body, err);
	buf_free(&form);
	if (rc != STATUS_OK)
		return rc;
	rc = grafana_parse_matrix(body.data, body.len, max_points, out, total,
				  msg, sizeof(msg));
	buf_free(&body);
	if (rc == STATUS_LIMIT) {
		err->kind = GRAFANA_FAIL_QUERY;
		say(err->client, sizeof(err->client), "%s", msg);
		say(err->detail, sizeof(err->detail), "%s", msg);
		return STATUS_LIMIT;
	}
	if (rc != STATUS_OK)
		return bad_answer(g, rc, msg, err);
	return STATUS_OK;
}
