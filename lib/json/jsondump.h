/*
 * jsondump.h - serializes jansson values to compact JSON text, a faster
 * json_dumps for the answers the gateway sends.
 *
 * Why: json_dumps keeps a hashtable of the containers being dumped (keyed
 * by snprintf("%p") of each), formats every integer with snprintf and
 * escapes strings a code point at a time; for a 60-100 KB query_traces
 * answer that was 0.8-0.9 ms of a ~5 ms call (issue 4).  jsondump writes
 * into one growable buffer, copies runs of plain string bytes at once and
 * detects loops with a stack of the current container's ancestors.
 *
 * The output is byte for byte what json_dumps(v, flags) gives with jansson
 * 2.14, NULL included, but for reals: those are the shortest decimal that
 * reads back as the same double ("45.497626", not json_dumps's "%.17g"
 * "45.497625999999997"; the same value for any reader, in fewer digits).
 * The differential fuzzer test/fuzz/fuzz_jsondump.c checks both: the same
 * bytes where there is no real, and the value read back equal where there
 * is.
 */
#ifndef SEXTANT_JSONDUMP_H
#define SEXTANT_JSONDUMP_H

#include <jansson.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/status.h"

/* Nesting jsondump serializes itself; a deeper value is handed to
 * json_dumps (which has no limit of its own).  MCP messages nest a few
 * levels. */
#define JSONDUMP_MAX_DEPTH 128

/*
 * v as JSON text, as json_dumps(v, flags) (reals aside): a malloc'd
 * NUL-terminated string the caller frees with free(), or NULL on ENOMEM,
 * a string that is not UTF-8, a container that contains itself, or a
 * top-level value that is neither an object nor an array without
 * JSON_ENCODE_ANY.  flags JSON_COMPACT, optionally with JSON_ENCODE_ANY,
 * take the fast path; any other flags are passed to json_dumps.  v is
 * borrowed and not changed.  Thread-safe (as json_dumps: nobody may change
 * v meanwhile).
 */
char *jsondump(const json_t *v, size_t flags);

/*
 * The writer: JSON tokens appended to b exactly as jsondump writes those
 * values, for an answer too large to build as jansson values first (a
 * query_traces answer holds thousands).  The caller writes the
 * punctuation.  Appends like buf's (buf.h): nothing while an error is
 * pending in b; a failure leaves the bytes as they were and stays in b as
 * its error, so the caller may write freely and check buf_error once:
 * STATUS_INVALID for a string that is not UTF-8 (or NULL) or a real that
 * is not finite, STATUS_NOMEM when b cannot grow.  Each returns
 * buf_error(b) after the call.
 */
int jsondump_string(struct buf *b, const char *s, size_t n);
int jsondump_integer(struct buf *b, json_int_t v);
int jsondump_real(struct buf *b, double v);

#endif
