/*
 * expo.c - the gateway's own Prometheus counters, gauges and histograms
 * (see expo.h), lock-free updates, rendered in the text exposition format
 * 0.0.4.
 *
 * Locking rules:
 * - expo.mu guards registration: the family list tail and the duplicate
 *   name check.  family.mu guards child creation: the child list tail, the
 *   hash chains' heads being replaced, and the child count.
 * - Both lists are append-only until expo_free.  A node is fully built
 *   before it is published with a release store (list head, a predecessor's
 *   next, or a hash-chain head), and readers walk with acquire loads, so
 *   lookup and render take no lock.  A child's hash_next is set before it is
 *   published and never changes.
 * - Values are C11 atomics with relaxed ordering: they are independent
 *   numbers and no other memory is published through them.  Doubles live in
 *   _Atomic uint64_t as bit patterns updated by CAS; counter increments go to
 *   a separate integral count so the common expo_inc is one fetch_add.
 */
#include "base/expo.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

/* Hash-chain heads per labeled family: short chains for the usual tens of
 * children, still ~40 per chain at EXPO_MAX_CHILDREN. */
#define CHILD_HASH_SIZE 256

static const double default_buckets[] = {
	.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10};

struct expo_series {
	struct expo_family *fam;
	struct expo_series *hash_next;	    /* immutable once published */
	_Atomic(struct expo_series *) next; /* creation order */
	uint32_t hash;
	char **values;		/* fam->nlabels copies, one allocation */
	_Atomic uint64_t count; /* counter: expo_inc total */
	_Atomic uint64_t bits; /* double: counter adds, gauge value, hist sum */
	_Atomic uint64_t bucket[]; /* histogram: nbounds + 1, not cumulative */
};

struct expo_family {
	enum expo_type type;
	char *name;
	char *help;
	size_t nlabels;
	char **labels; /* nlabels names, pointing into label_buf */
	char *label_buf;
	double *bounds; /* histogram upper bounds, ascending, without +Inf */
	size_t nbounds;
	double (*fn)(void *arg); /* expo_gauge_fn: value read at render */
	void *fn_arg;
	pthread_mutex_t mu;
	size_t nchildren;	  /* under mu */
	struct expo_series *last; /* under mu */
	_Atomic(struct expo_series *) first;
	/* CHILD_HASH_SIZE chain heads; NULL when the family has no labels */
	_Atomic(struct expo_series *) *hash;
	_Atomic(struct expo_family *) next;
};

struct expo {
	pthread_mutex_t mu;
	struct expo_family *last; /* under mu */
	_Atomic(struct expo_family *) first;
};

static double
bits_to_double(uint64_t b)
{
	double d;
	memcpy(&d, &b, sizeof(d));
	return d;
}

static uint64_t
double_to_bits(double d)
{
	uint64_t b;
	memcpy(&b, &d, sizeof(b));
	return b;
}

static void
atomic_add_double(_Atomic uint64_t *p, double v)
{
	uint64_t old = atomic_load_explicit(p, memory_order_relaxed);
	uint64_t nv;

	do {
		nv = double_to_bits(bits_to_double(old) + v);
	} while (!atomic_compare_exchange_weak_explicit(
		p, &old, nv, memory_order_relaxed, memory_order_relaxed));
}

static double
load_double(const _Atomic uint64_t *p)
{
	/* atomic_load on a const-qualified atomic is not portable before C17 */
	return bits_to_double(atomic_load_explicit((_Atomic uint64_t *)p,
						   memory_order_relaxed));
}

static bool
valid_name(const char *s, bool allow_colon)
{
	size_t n;

	if (s == NULL || s[0] == '\0')
		return false;
	for (n = 0; s[n] != '\0'; n++) {
		char ch = s[n];
		bool ok = (ch >= 'a' && ch <= 'z') ||
			  (ch >= 'A' && ch <= 'Z') || ch == '_' ||
			  (allow_colon && ch == ':') ||
			  (n > 0 && ch >= '0' && ch <= '9');
		if (!ok || n >= EXPO_MAX_NAME_LEN)
			return false;
	}
	return true;
}

static char *
dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = malloc(n);

	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

static void
child_free(struct expo_series *c)
{
	if (c == NULL)
		return;
	free(c->values);
	free(c);
}

static void
family_free(struct expo_family *f)
{
	struct expo_series *c, *next;

	if (f == NULL)
		return;
	for (c = atomic_load_explicit(&f->first, memory_order_relaxed);
	     c != NULL; c = next) {
		next = atomic_load_explicit(&c->next, memory_order_relaxed);
		child_free(c);
	}
	pthread_mutex_destroy(&f->mu);
	free(f->hash);
	free(f->bounds);
	free(f->labels);
	free(f->label_buf);
	free(f->help);
	free(f->name);
	free(f);
}

int
expo_new(struct expo **out)
{
	struct expo *m;

	*out = NULL;
	m = calloc(1, sizeof(*m));
	if (m == NULL)
		return STATUS_NOMEM;
	if (pthread_mutex_init(&m->mu, NULL) != 0) {
		free(m);
		return STATUS_IO;
	}
	atomic_init(&m->first, NULL);
	*out = m;
	return STATUS_OK;
}

void
expo_free(struct expo *m)
{
	struct expo_family *f, *next;

	if (m == NULL)
		return;
	for (f = atomic_load_explicit(&m->first, memory_order_relaxed);
	     f != NULL; f = next) {
		next = atomic_load_explicit(&f->next, memory_order_relaxed);
		family_free(f);
	}
	pthread_mutex_destroy(&m->mu);
	free(m);
}

/* Splits "a, b" into f->labels; false on a bad, reserved or repeated name. */
static bool
parse_labels(struct expo_family *f, const char *spec)
{
	size_t n = 1, i, j;
	const char *q;
	char *p;

	if (spec == NULL || spec[0] == '\0')
		return true;
	for (q = spec; *q != '\0'; q++)
		if (*q == ',')
			n++;
	if (n > EXPO_MAX_LABELS)
		return false;
	f->label_buf = dup_str(spec);
	f->labels = calloc(n, sizeof(*f->labels));
	if (f->label_buf == NULL || f->labels == NULL)
		return false;
	p = f->label_buf;
	for (i = 0; i < n; i++) {
		char *end = strchr(p, ',');
		char *next = end != NULL ? end + 1 : NULL;

		if (end == NULL)
			end = p + strlen(p);
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		*end = '\0';
		if (!valid_name(p, false) || strncmp(p, "__", 2) == 0)
			return false;
		if (f->type == EXPO_HISTOGRAM && strcmp(p, "le") == 0)
			return false;
		for (j = 0; j < i; j++)
			if (strcmp(f->labels[j], p) == 0)
				return false;
		f->labels[i] = p;
		p = next;
	}
	f->nlabels = n;
	return true;
}

static bool
parse_buckets(struct expo_family *f, const double *buckets, size_t nbuckets)
{
	size_t i;

	if (f->type != EXPO_HISTOGRAM)
		return buckets == NULL && nbuckets == 0;
	if (buckets == NULL) {
		buckets = default_buckets;
		nbuckets = sizeof(default_buckets) / sizeof(default_buckets[0]);
	}
	/* +Inf is implicit; accept it spelled out as the last bound */
	if (nbuckets > 0 && isinf(buckets[nbuckets - 1]) &&
	    buckets[nbuckets - 1] > 0)
		nbuckets--;
	if (nbuckets == 0 || nbuckets > EXPO_MAX_BUCKETS)
		return false;
	for (i = 0; i < nbuckets; i++) {
		if (!isfinite(buckets[i]))
			return false;
		if (i > 0 && !(buckets[i] > buckets[i - 1]))
			return false;
	}
	f->bounds = malloc(nbuckets * sizeof(*f->bounds));
	if (f->bounds == NULL)
		return false;
	memcpy(f->bounds, buckets, nbuckets * sizeof(*f->bounds));
	f->nbounds = nbuckets;
	return true;
}

static struct expo_family *
family_alloc(enum expo_type type, const char *name, const char *help)
{
	struct expo_family *f;

	if (!valid_name(name, true))
		return NULL;
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return NULL;
	if (pthread_mutex_init(&f->mu, NULL) != 0) {
		free(f);
		return NULL;
	}
	f->type = type;
	atomic_init(&f->first, NULL);
	atomic_init(&f->next, NULL);
	f->name = dup_str(name);
	f->help = dup_str(help != NULL ? help : "");
	if (f->name == NULL || f->help == NULL) {
		family_free(f);
		return NULL;
	}
	return f;
}

static struct expo_series *
child_alloc(struct expo_family *f, const char *const *values)
{
	size_t nb = f->type == EXPO_HISTOGRAM ? f->nbounds + 1 : 0;
	size_t i, bytes = f->nlabels * sizeof(char *);
	struct expo_series *c;
	char *p;

	for (i = 0; i < f->nlabels; i++)
		bytes += strlen(values[i]) + 1;
	c = calloc(1, sizeof(*c) + nb * sizeof(c->bucket[0]));
	if (c == NULL)
		return NULL;
	if (f->nlabels > 0) {
		c->values = malloc(bytes);
		if (c->values == NULL) {
			free(c);
			return NULL;
		}
		p = (char *)(c->values + f->nlabels);
		for (i = 0; i < f->nlabels; i++) {
			size_t len = strlen(values[i]) + 1;

			memcpy(p, values[i], len);
			c->values[i] = p;
			p += len;
		}
	}
	c->fam = f;
	atomic_init(&c->next, NULL);
	atomic_init(&c->count, 0);
	atomic_init(&c->bits, double_to_bits(0.0));
	for (i = 0; i < nb; i++)
		atomic_init(&c->bucket[i], 0);
	return c;
}

/* Appends c in creation order; caller holds f->mu. */
static void
child_publish(struct expo_family *f, struct expo_series *c)
{
	if (f->last != NULL)
		atomic_store_explicit(&f->last->next, c, memory_order_release);
	else
		atomic_store_explicit(&f->first, c, memory_order_release);
	f->last = c;
	f->nchildren++;
}

static bool
same_definition(const struct expo_family *a, const struct expo_family *b)
{
	size_t i;

	if (a->type != b->type || a->fn != NULL || b->fn != NULL ||
	    a->nlabels != b->nlabels || a->nbounds != b->nbounds)
		return false;
	for (i = 0; i < a->nlabels; i++)
		if (strcmp(a->labels[i], b->labels[i]) != 0)
			return false;
	for (i = 0; i < a->nbounds; i++)
		if (a->bounds[i] != b->bounds[i])
			return false;
	return true;
}

static struct expo_family *
find_family(struct expo *m, const char *name)
{
	struct expo_family *f;

	for (f = atomic_load_explicit(&m->first, memory_order_acquire);
	     f != NULL;
	     f = atomic_load_explicit(&f->next, memory_order_acquire))
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

/* Adds f unless its name is taken; returns the family now registered under
 * that name (f itself, or the older one) and sets *added. */
static struct expo_family *
register_family(struct expo *m, struct expo_family *f, bool *added)
{
	struct expo_family *old;

	pthread_mutex_lock(&m->mu);
	old = find_family(m, f->name);
	if (old == NULL) {
		if (m->last != NULL)
			atomic_store_explicit(&m->last->next, f,
					      memory_order_release);
		else
			atomic_store_explicit(&m->first, f,
					      memory_order_release);
		m->last = f;
		old = f;
	}
	pthread_mutex_unlock(&m->mu);
	*added = old == f;
	return old;
}

struct expo_family *
expo_family(struct expo *m, enum expo_type type, const char *name,
	    const char *help, const char *label_names, const double *buckets,
	    size_t nbuckets)
{
	struct expo_family *f = NULL, *ret = NULL, *reg;
	bool added;
	size_t i;

	if (m == NULL || (type != EXPO_COUNTER && type != EXPO_GAUGE &&
			  type != EXPO_HISTOGRAM))
		goto out;
	f = family_alloc(type, name, help);
	if (f == NULL)
		goto out;
	if (!parse_labels(f, label_names) ||
	    !parse_buckets(f, buckets, nbuckets))
		goto out;
	if (f->nlabels == 0) {
		struct expo_series *c = child_alloc(f, NULL);

		if (c == NULL)
			goto out;
		child_publish(f, c);
	} else {
		f->hash = calloc(CHILD_HASH_SIZE, sizeof(*f->hash));
		if (f->hash == NULL)
			goto out;
		for (i = 0; i < CHILD_HASH_SIZE; i++)
			atomic_init(&f->hash[i], NULL);
	}
	reg = register_family(m, f, &added);
	if (added)
		f = NULL;
	else if (!same_definition(reg, f))
		goto out;
	ret = reg;
out:
	family_free(f);
	return ret;
}

static int
value_fn(struct expo *m, enum expo_type type, const char *name,
	 const char *help, double (*fn)(void *arg), void *arg)
{
	struct expo_family *f;
	bool added;

	if (m == NULL || fn == NULL || !valid_name(name, true))
		return STATUS_INVALID;
	f = family_alloc(type, name, help);
	if (f == NULL)
		return STATUS_NOMEM;
	f->fn = fn;
	f->fn_arg = arg;
	(void)register_family(m, f, &added);
	if (!added) {
		family_free(f);
		return STATUS_EXISTS;
	}
	return STATUS_OK;
}

int
expo_gauge_fn(struct expo *m, const char *name, const char *help,
	      double (*fn)(void *arg), void *arg)
{
	return value_fn(m, EXPO_GAUGE, name, help, fn, arg);
}

int
expo_counter_fn(struct expo *m, const char *name, const char *help,
		double (*fn)(void *arg), void *arg)
{
	return value_fn(m, EXPO_COUNTER, name, help, fn, arg);
}

/* FNV-1a over the values, with a separator so ("ab","") != ("a","b"). */
static uint32_t
hash_values(const char *const *values, size_t n)
{
	uint32_t h = 2166136261u;
	size_t i;
	const unsigned char *p;

	for (i = 0; i < n; i++) {
		for (p = (const unsigned char *)values[i]; *p != '\0'; p++)
			h = (h ^ *p) * 16777619u;
		h = (h ^ 0xffu) * 16777619u;
	}
	return h;
}

static struct expo_series *
find_child(struct expo_family *f, uint32_t h, const char *const *values)
{
	struct expo_series *c;
	size_t i;

	c = atomic_load_explicit(&f->hash[h % CHILD_HASH_SIZE],
				 memory_order_acquire);
	for (; c != NULL; c = c->hash_next) {
		if (c->hash != h)
			continue;
		for (i = 0; i < f->nlabels; i++)
			if (strcmp(c->values[i], values[i]) != 0)
				break;
		if (i == f->nlabels)
			return c;
	}
	return NULL;
}

struct expo_series *
expo_series(struct expo_family *f, const char *const *values)
{
	struct expo_series *c;
	uint32_t h;
	size_t i;

	if (f == NULL || f->fn != NULL)
		return NULL;
	if (f->nlabels == 0)
		return atomic_load_explicit(&f->first, memory_order_acquire);
	if (values == NULL)
		return NULL;
	for (i = 0; i < f->nlabels; i++)
		if (values[i] == NULL ||
		    strnlen(values[i], EXPO_MAX_VALUE_LEN + 1) >
			    EXPO_MAX_VALUE_LEN)
			return NULL;
	h = hash_values(values, f->nlabels);
	c = find_child(f, h, values);
	if (c != NULL)
		return c;

	pthread_mutex_lock(&f->mu);
	c = find_child(f, h, values); /* another thread may have won */
	if (c == NULL && f->nchildren < EXPO_MAX_CHILDREN) {
		c = child_alloc(f, values);
		if (c != NULL) {
			c->hash = h;
			c->hash_next = atomic_load_explicit(
				&f->hash[h % CHILD_HASH_SIZE],
				memory_order_relaxed);
			atomic_store_explicit(&f->hash[h % CHILD_HASH_SIZE], c,
					      memory_order_release);
			child_publish(f, c);
		}
	}
	pthread_mutex_unlock(&f->mu);
	return c;
}

void
expo_inc(struct expo_series *c)
{
	if (c == NULL)
		return;
	if (c->fam->type == EXPO_COUNTER)
		atomic_fetch_add_explicit(&c->count, 1, memory_order_relaxed);
	else if (c->fam->type == EXPO_GAUGE)
		atomic_add_double(&c->bits, 1.0);
}

void
expo_dec(struct expo_series *c)
{
	if (c != NULL && c->fam->type == EXPO_GAUGE)
		atomic_add_double(&c->bits, -1.0);
}

void
expo_add(struct expo_series *c, double v)
{
	if (c == NULL)
		return;
	if (c->fam->type == EXPO_COUNTER) {
		/* counters only go up: a negative or non-finite add would
		 * corrupt every later rate() */
		if (isfinite(v) && v >= 0)
			atomic_add_double(&c->bits, v);
	} else if (c->fam->type == EXPO_GAUGE) {
		atomic_add_double(&c->bits, v);
	}
}

void
expo_set(struct expo_series *c, double v)
{
	if (c != NULL && c->fam->type == EXPO_GAUGE)
		atomic_store_explicit(&c->bits, double_to_bits(v),
				      memory_order_relaxed);
}

void
expo_observe(struct expo_series *c, double v)
{
	const struct expo_family *f;
	size_t lo = 0, hi;

	if (c == NULL || c->fam->type != EXPO_HISTOGRAM || isnan(v))
		return;
	f = c->fam;
	/* first bound >= v: buckets are "le" (inclusive); none = +Inf */
	hi = f->nbounds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v <= f->bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	atomic_fetch_add_explicit(&c->bucket[lo], 1, memory_order_relaxed);
	atomic_add_double(&c->bits, v);
}

double
expo_value(const struct expo_series *c)
{
	uint64_t n;

	if (c == NULL)
		return 0;
	switch (c->fam->type) {
	case EXPO_COUNTER:
		n = atomic_load_explicit((_Atomic uint64_t *)&c->count,
					 memory_order_relaxed);
		return (double)n + load_double(&c->bits);
	case EXPO_GAUGE: return load_double(&c->bits);
	case EXPO_HISTOGRAM: break;
	}
	return 0;
}

/* ---- rendering ---------------------------------------------------------- */

/* Escapes \ and newline, and " when quoted (label values), per the text
 * format: HELP escapes only the first two. */
static void
put_escaped(struct buf *b, const char *s, bool quoted)
{
	const char *run = s;

	for (; *s != '\0'; s++) {
		const char *esc = NULL;

		if (*s == '\\')
			esc = "\\\\";
		else if (*s == '\n')
			esc = "\\n";
		else if (*s == '"' && quoted)
			esc = "\\\"";
		if (esc == NULL)
			continue;
		buf_append(b, run, (size_t)(s - run));
		buf_puts(b, esc);
		run = s + 1;
	}
	buf_append(b, run, (size_t)(s - run));
}

/* Shortest of %.15g / %.17g that reads back exactly; the format's own
 * spellings for the non-finite values.  Assumes the C numeric locale. */
static void
fmt_double(char out[32], double v)
{
	if (isnan(v)) {
		snprintf(out, 32, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, 32, "%s", v > 0 ? "+Inf" : "-Inf");
		return;
	}
	snprintf(out, 32, "%.15g", v);
	if (strtod(out, NULL) != v)
		snprintf(out, 32, "%.17g", v);
}

static void
put_double(struct buf *b, double v)
{
	char num[32];

	fmt_double(num, v);
	buf_puts(b, num);
}

/* name{l1="v1",...,le="x"} value\n; le may be NULL. */
static void
put_sample(struct buf *b, const struct expo_family *f,
	   const struct expo_series *c, const char *suffix, const char *le,
	   double v)
{
	size_t i;

	buf_puts(b, f->name);
	buf_puts(b, suffix);
	if (f->nlabels > 0 || le != NULL) {
		buf_append(b, "{", 1);
		for (i = 0; i < f->nlabels; i++) {
			if (i > 0)
				buf_append(b, ",", 1);
			buf_puts(b, f->labels[i]);
			buf_append(b, "=\"", 2);
			put_escaped(b, c->values[i], true);
			buf_append(b, "\"", 1);
		}
		if (le != NULL) {
			if (f->nlabels > 0)
				buf_append(b, ",", 1);
			buf_puts(b, "le=\"");
			buf_puts(b, le);
			buf_append(b, "\"", 1);
		}
		buf_append(b, "}", 1);
	}
	buf_append(b, " ", 1);
	put_double(b, v);
	buf_append(b, "\n", 1);
}

static void
render_histogram(struct buf *b, const struct expo_family *f,
		 struct expo_series *c)
{
	uint64_t cum = 0;
	char le[32];
	size_t i;

	for (i = 0; i <= f->nbounds; i++) {
		cum += atomic_load_explicit(&c->bucket[i],
					    memory_order_relaxed);
		fmt_double(le, i < f->nbounds ? f->bounds[i] : INFINITY);
		put_sample(b, f, c, "_bucket", le, (double)cum);
	}
	put_sample(b, f, c, "_sum", NULL, load_double(&c->bits));
	/* from the buckets, so _count always equals the +Inf bucket */
	put_sample(b, f, c, "_count", NULL, (double)cum);
}

static void
render_family(struct buf *b, const struct expo_family *f)
{
	static const char *const type_names[] = {
		[EXPO_COUNTER] = "counter",
		[EXPO_GAUGE] = "gauge",
		[EXPO_HISTOGRAM] = "histogram",
	};
	struct expo_series *c;

	if (f->help[0] != '\0') {
		buf_puts(b, "# HELP ");
		buf_puts(b, f->name);
		buf_append(b, " ", 1);
		put_escaped(b, f->help, false);
		buf_append(b, "\n", 1);
	}
	buf_puts(b, "# TYPE ");
	buf_puts(b, f->name);
	buf_append(b, " ", 1);
	buf_puts(b, type_names[f->type]);
	buf_append(b, "\n", 1);
	if (f->fn != NULL) {
		put_sample(b, f, NULL, "", NULL, f->fn(f->fn_arg));
		return;
	}
	for (c = atomic_load_explicit(&f->first, memory_order_acquire);
	     c != NULL;
	     c = atomic_load_explicit(&c->next, memory_order_acquire)) {
		if (f->type == EXPO_HISTOGRAM)
			render_histogram(b, f, c);
		else
			put_sample(b, f, c, "", NULL, expo_value(c));
	}
}

int
expo_render(struct expo *m, char **out, size_t *len)
{
	struct expo_family *f;
	struct buf b;

	*out = NULL;
	*len = 0;
	if (m == NULL)
		return STATUS_INVALID;
	/* the text and its NUL within EXPO_MAX_RENDER_BYTES */
	buf_init(&b, EXPO_MAX_RENDER_BYTES - 1);
	for (f = atomic_load_explicit(&m->first, memory_order_acquire);
	     f != NULL && buf_error(&b) == STATUS_OK;
	     f = atomic_load_explicit(&f->next, memory_order_acquire))
		render_family(&b, f);
	return buf_finish(&b, out, len);
}
