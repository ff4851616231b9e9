/*
 * locks.h - every PostgreSQL advisory lock id Sextant takes, in one place
 * so that no two uses share one by mistake.  The ids are "SEXTANT" in
 * ASCII followed by a serial byte (0x5345585441 4E54 xx), as text for the
 * SQL that names them.
 */
#ifndef SEXTANT_LOCKS_H
#define SEXTANT_LOCKS_H

/* Session lock: one migrator at a time (lib/pg/migrate). */
#define LOCK_MIGRATE "6000299197437203457"
/* Transaction lock: partition upkeep.  Taken by the SQL functions of
 * migrations/0001_time_tables.sql, which spell it out: keep in step. */
#define LOCK_PARTITIONS "6000299197437203458"
/* Transaction lock: one span_rollup refresh at a time (lib/telemetry/rollup). */
#define LOCK_ROLLUP_REFRESH "6000299197437203459"
/* Transaction lock: one replica sweeps idle shared sessions (lib/pg/sessdb). */
#define LOCK_SESSION_SWEEP "6000299197437203460"

#endif
