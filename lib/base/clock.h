/*
 * clock.h - the two clocks, in the units the code uses: monotonic for
 * durations and deadlines (never jumps), wall for what is shown or stored
 * (task timestamps, time ranges, sealed-state expiry).
 */
#ifndef SEXTANT_CLOCK_H
#define SEXTANT_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds / microseconds.  Thread-safe. */
int64_t clock_mono_ms(void);
int64_t clock_mono_us(void);

/* CLOCK_REALTIME in milliseconds since the Unix epoch.  Thread-safe. */
int64_t clock_wall_ms(void);

#endif
