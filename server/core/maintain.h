/*
 * maintain.h - the store's upkeep: migrations, day partitions, rollups.
 * The commands run on connections of their own; maintain_tick is the
 * janitor's share while serving.
 */
#ifndef SEXTANT_MAINTAIN_H
#define SEXTANT_MAINTAIN_H

#include <stddef.h>

#include "base/status.h"

struct config;
struct server;

/* Applies the migrations on a connection of its own (serve with
 * database.auto_migrate, and `sextant migrate`).  STATUS_IO when the
 * database cannot be reached; err says why. */
int maintain_migrate(const struct config *cfg, int *applied, char *err,
		     size_t errlen) WUR;

/* `sextant maintain`, on connections of its own: creates upcoming day
 * partitions, drops expired ones, prunes expired rollups and recomputes
 * every settled rollup hour still marked dirty.  (While serving,
 * maintain_tick does the same in the background.) */
int maintain_all(const struct config *cfg, char *err, size_t errlen) WUR;

/* From the janitor tick (main thread): migrations once the database is
 * back, partition upkeep every database.maintain_interval_s, and rollup
 * refreshes queued on srv->pool (never run on the tick thread). */
void maintain_tick(struct server *srv);

#endif
