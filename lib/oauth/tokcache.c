/*
 * tokcache.c - the bounded cache of verified tokens (see tokcache.h).
 */
#include "oauth/tokcache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct entry {
	unsigned char key[TOKCACHE_KEY];
	int64_t expires_ms; /* 0: empty */
	uint64_t used;	    /* the cache's tick at the last hit or put */
};

struct tokcache {
	pthread_mutex_t lock;
	size_t nsets;
	uint64_t tick;
	size_t count;
	size_t value_size;
	struct entry *e;     /* nsets * TOKCACHE_WAYS */
	unsigned char *vals; /* value_size bytes per entry, same order */
};

int
tokcache_new(size_t entries, size_t value_size, struct tokcache **out)
{
	struct tokcache *c;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return STATUS_NOMEM;
	c->nsets = (entries + TOKCACHE_WAYS - 1) / TOKCACHE_WAYS;
	c->value_size = value_size;
	if (c->nsets > 0 &&
	    ((c->e = calloc(c->nsets * TOKCACHE_WAYS, sizeof(*c->e))) == NULL ||
	     (c->vals = calloc(c->nsets * TOKCACHE_WAYS, value_size)) ==
		     NULL)) {
		free(c->e);
		free(c);
		return STATUS_NOMEM;
	}
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return STATUS_OK;
}

void
tokcache_free(struct tokcache *c)
{
	if (c == NULL)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->e);
	free(c->vals);
	free(c);
}

/* The key is a SHA-256 already: its first bytes pick the set. */
static struct entry *
set_of(struct tokcache *c, const unsigned char key[TOKCACHE_KEY])
{
	uint64_t h;

	memcpy(&h, key, sizeof(h));
	return &c->e[(h % c->nsets) * TOKCACHE_WAYS];
}

static unsigned char *
val_of(struct tokcache *c, const struct entry *e)
{
	return c->vals + (size_t)(e - c->e) * c->value_size;
}

int
tokcache_get(struct tokcache *c, const unsigned char key[TOKCACHE_KEY],
	     int64_t now_ms, void *value)
{
	struct entry *set;
	int rc = STATUS_NOTFOUND;

	if (c == NULL || c->nsets == 0)
		return STATUS_NOTFOUND;
	pthread_mutex_lock(&c->lock);
	set = set_of(c, key);
	for (size_t i = 0; i < TOKCACHE_WAYS; i++) {
		if (set[i].expires_ms > now_ms &&
		    memcmp(set[i].key, key, TOKCACHE_KEY) == 0) {
			set[i].used = ++c->tick;
			memcpy(value, val_of(c, &set[i]), c->value_size);
			rc = STATUS_OK;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void
tokcache_put(struct tokcache *c, const unsigned char key[TOKCACHE_KEY],
	     int64_t expires_ms, int64_t now_ms, const void *value)
{
	struct entry *set, *victim = NULL;

	if (c == NULL || c->nsets == 0 || expires_ms <= now_ms)
		return;
	pthread_mutex_lock(&c->lock);
	set = set_of(c, key);
	for (size_t i = 0; i < TOKCACHE_WAYS && victim == NULL; i++)
		if (set[i].expires_ms != 0 &&
		    memcmp(set[i].key, key, TOKCACHE_KEY) == 0)
			victim = &set[i];
	for (size_t i = 0; i < TOKCACHE_WAYS && victim == NULL; i++)
		if (set[i].expires_ms <= now_ms)
			victim = &set[i];
	if (victim == NULL) {
		victim = &set[0];
		for (size_t i = 1; i < TOKCACHE_WAYS; i++)
			if (set[i].used < victim->used)
				victim = &set[i];
	}
	if (victim->expires_ms == 0)
		c->count++;
	memcpy(victim->key, key, TOKCACHE_KEY);
	victim->expires_ms = expires_ms;
	victim->used = ++c->tick;
	memcpy(val_of(c, victim), value, c->value_size);
	pthread_mutex_unlock(&c->lock);
}

size_t
tokcache_count(struct tokcache *c)
{
	size_t n;

	if (c == NULL)
		return 0;
	pthread_mutex_lock(&c->lock);
	n = c->count;
	pthread_mutex_unlock(&c->lock);
	return n;
}
