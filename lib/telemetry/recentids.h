/*
 * recentids.h - the ids of the most recent traces and agent sessions in the
 * store, most recently active first, for completing an id as it is typed
 * (server/mcp/prompts.c keeps them in memory).
 */
#ifndef SEXTANT_RECENTIDS_H
#define SEXTANT_RECENTIDS_H

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "pg/pg.h"

enum recentids_kind {
	RECENTIDS_TRACES,   /* trace ids as 32 lowercase hex digits */
	RECENTIDS_SESSIONS, /* session ids (gen_ai.conversation.id) */
};

/* Ids at most per call: a completion cache of bounded memory (about
 * 100 KB of ids either way). */
#define RECENTIDS_MAX 1000

struct recentids {
	const char **ids; /* borrowed from priv_, valid until _free */
	size_t n;
	void *priv_;
};

/*
 * The ids of kind with spans in [from_ms, to_ms), the one with the latest
 * span first, at most max (1..RECENTIDS_MAX).  Traces: the distinct ids of
 * the latest 20 * max spans of each source, walked backwards on the
 * (source, start_time) index, so the work is bounded however many spans
 * the range holds.  Sessions: every session of the range (the partial
 * session index).  *out: caller frees with recentids_free; NULL on
 * failure.  STATUS_INVALID for an empty range or a max out of bounds;
 * lib/pg errors (the connection's statement timeout applies).
 */
int recentids_get(struct pg_conn *c, enum recentids_kind kind, int64_t from_ms,
		  int64_t to_ms, size_t max, struct recentids **out,
		  struct pg_error *err) WUR;
void recentids_free(struct recentids *r);

#endif
