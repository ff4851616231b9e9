/*
 * log.h - the one logger: one JSON object per line, written atomically.
 *
 * Global state is only the level (default info) and the output (default
 * stderr); both work without set-up.  NEVER pass secrets (API keys, bearer
 * tokens, passwords, database URLs with credentials) in a message or a
 * field: nothing here can tell a secret from any other string.
 */
#ifndef SEXTANT_LOG_H
#define SEXTANT_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/status.h"

enum log_level {
	LOG_LEVEL_DEBUG = 0,
	LOG_LEVEL_INFO = 1,
	LOG_LEVEL_WARN = 2,
	LOG_LEVEL_ERROR = 3,
};

/*
 * Longest line written, newline included.  A longer message is cut at a
 * character boundary and ends in "..."; the line stays valid JSON and keeps
 * its fields.  Each string field is cut likewise at LOG_FIELD_MAX bytes of
 * escaped text.
 */
#define LOG_LINE_MAX  4096
#define LOG_FIELD_MAX 256

/*
 * Fields printed with a line when set: NULL / negative means absent.
 * Strings are borrowed for the duration of the call only.
 */
struct log_fields {
	const char *request_id;
	const char *session;
	const char *method;
	const char *tool;
	double duration_ms; /* < 0 (or not finite): absent; capped at 1e15 */
	int status;	    /* 0: absent (an HTTP status or a JSON-RPC code) */
};

/* Thread-safe (atomic).  An out-of-range level is clamped to the nearest. */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* True when a line at level would be written.  One relaxed atomic load. */
bool log_enabled(enum log_level level);

/*
 * Directs lines to f (borrowed; NULL = back to stderr).  Meant for start-up
 * and tests: f must stay open until it has been replaced and no thread can
 * still be inside log_msg with it.
 */
void log_set_output(FILE *f);

/*
 * Writes one line:
 *   {"ts":"2026-11-21T20:01:02.123Z","level":"info","msg":"...",
 *    "request_id":..,"session":..,"method":..,"tool":..,"duration_ms":..,
 *    "status":..}\n
 * with only the fields present in fields (which may be NULL).  The level is
 * checked before any formatting.  msg and field values are JSON-escaped
 * (control characters as \u00XX, invalid UTF-8 as U+FFFD).  The line is
 * built on the stack (bounded by LOG_LINE_MAX, no allocation) and written
 * with one fwrite under the stream's lock, so lines from concurrent threads
 * never interleave.  Thread-safe; errno is preserved; write errors are
 * ignored (there is nowhere to report them).
 */
void log_msg(enum log_level level, const struct log_fields *fields,
	     const char *fmt, ...) PRINTF_LIKE(3, 4);
void log_vmsg(enum log_level level, const struct log_fields *fields,
	      const char *fmt, va_list ap) PRINTF_LIKE(3, 0);

/*
 * log_debug(fields, fmt, ...) and friends.  The arguments are not
 * evaluated when the level is disabled.  Variadic as a whole so that a
 * compound literal (with its commas) can be passed as fields.
 */
#define log_debug(...)                                                         \
	do {                                                                   \
		if (log_enabled(LOG_LEVEL_DEBUG))                              \
			log_msg(LOG_LEVEL_DEBUG, __VA_ARGS__);                 \
	} while (0)
#define log_info(...)                                                          \
	do {                                                                   \
		if (log_enabled(LOG_LEVEL_INFO))                               \
			log_msg(LOG_LEVEL_INFO, __VA_ARGS__);                  \
	} while (0)
#define log_warn(...)                                                          \
	do {                                                                   \
		if (log_enabled(LOG_LEVEL_WARN))                               \
			log_msg(LOG_LEVEL_WARN, __VA_ARGS__);                  \
	} while (0)
#define log_error(...)                                                         \
	do {                                                                   \
		if (log_enabled(LOG_LEVEL_ERROR))                              \
			log_msg(LOG_LEVEL_ERROR, __VA_ARGS__);                 \
	} while (0)

/*
 * "debug", "info", "warn" (or "warning"), "error", case-insensitive, to the
 * level's value; -1 for NULL or any other name.
 */
int log_level_parse(const char *name);

/* "debug" | "info" | "warn" | "error"; "unknown" outside the enum. */
const char *log_level_name(enum log_level level);

#endif
