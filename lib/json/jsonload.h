/*
 * jsonload.h - parses the JSON-RPC messages clients send (HTTP bodies,
 * stdio lines) into jansson values, with a fast path in front of jansson's
 * json_loadb.
 *
 * Why: json_loadb reads its input a byte at a time through a stream
 * callback and costs ~150 instructions a byte, which made parsing the
 * largest part of a small request's CPU (a stateless 2026-07-28 tools/list
 * of 257 bytes: 50k instructions to parse, 12k to build the same values;
 * bench/RESULTS.md).  The fast path scans the buffer directly and builds
 * the same values.
 *
 * It never decides an error: for any input it is not sure of (invalid
 * JSON, duplicate keys, reals, integers of 19+ digits, \u0000, lone
 * surrogates, nesting deeper than JSONLOAD_FAST_DEPTH, bad UTF-8) it gives
 * up and jsonload() hands the whole input to json_loadb, whose answer and
 * error text (line, column) stand.  So jsonload() returns exactly what
 * json_loadb(s, n, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY) returns; the
 * differential fuzzer test/fuzz/fuzz_jsonload.c checks that, value, key
 * order and number types included.
 */
#ifndef SEXTANT_JSONLOAD_H
#define SEXTANT_JSONLOAD_H

#include <jansson.h>
#include <stddef.h>

/* Nesting the fast path parses; deeper input goes to json_loadb (whose
 * own limit is JSON_PARSER_MAX_DEPTH).  MCP messages nest a few levels. */
#define JSONLOAD_FAST_DEPTH 64

/*
 * The n bytes at s (need not be NUL-terminated) as one JSON value of any
 * type, duplicate object keys rejected.  Returns a new reference (caller
 * json_decref()s it), or NULL with *err filled by json_loadb (err may be
 * NULL).  Thread-safe.
 *
 * Read-only parts: a "_meta" object two levels down (a message's
 * params._meta or result._meta) may be shared with other results (the
 * _meta cache in jsonload.c: a 2026-07-28 client repeats the same _meta on
 * every request).  Never change it or anything in it; take references.
 */
json_t *jsonload(const char *s, size_t n, json_error_t *err);

/*
 * The fast path alone: the value, or NULL when it gives up (which says
 * nothing about the input's validity).  For tests and the fuzzer.
 */
json_t *jsonload_fast(const char *s, size_t n);

#endif
