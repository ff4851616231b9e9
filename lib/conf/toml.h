/*
 * toml.h - a small, strict TOML 1.0 parser for Sextant's configuration.
 *
 * Parses a whole document into an immutable tree of values.  Everything
 * config files use is supported; dates and times are rejected with a clear
 * error.  Every error carries a 1-based line and column.
 */
#ifndef SEXTANT_TOML_H
#define SEXTANT_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

/*
 * Nesting bound: tables, arrays and inline tables deeper than this fail.
 * Config files nest three levels; 64 leaves room and bounds the recursion
 * in the parser and in toml_free().
 */
#define TOML_MAX_DEPTH 64

enum toml_type {
	TOML_TABLE,
	TOML_ARRAY,
	TOML_STRING,
	TOML_INT,
	TOML_FLOAT,
	TOML_BOOL,
};

struct toml_value;

/* Where and why parsing failed.  line/column are 1-based (columns count
 * characters, not bytes); msg is lowercase with no trailing period. */
struct toml_error {
	int line, column;
	char msg[256];
};

/*
 * Parses len bytes of text (need not be NUL-terminated).  Documents longer
 * than max_len bytes fail with STATUS_LIMIT before any parsing, so callers
 * state the bound that fits their input.  The text must be valid UTF-8.
 * On success *out is the root table; the caller frees it with toml_free().
 * On failure *out is NULL, the return is STATUS_INVALID (bad document),
 * STATUS_LIMIT or STATUS_NOMEM, and err (if not NULL) says where and why.
 * Thread-safe: no shared state.
 */
int toml_parse(const char *text, size_t len, size_t max_len,
	       struct toml_value **out, struct toml_error *err) WUR;

/* Frees a tree from toml_parse().  Accepts NULL.  Every pointer obtained
 * from the accessors below dies with the tree. */
void toml_free(struct toml_value *root);

enum toml_type toml_type(const struct toml_value *v);

/* "table", "array", "string", "integer", "float", "boolean". */
const char *toml_type_name(enum toml_type type);

/* Position of the value in the document (for tables made by a header, the
 * header's key; for implicit tables, where they were first named). */
int toml_line(const struct toml_value *v);
int toml_column(const struct toml_value *v);

/* Table access.  Entries keep document order.  Keys never contain NUL.
 * toml_table_get returns NULL when t is not a table or has no such key. */
const struct toml_value *toml_table_get(const struct toml_value *t,
					const char *key);
size_t toml_table_count(const struct toml_value *t);
const char *toml_table_key_at(const struct toml_value *t, size_t i);
const struct toml_value *toml_table_value_at(const struct toml_value *t,
					     size_t i);
/* Position of the i-th key where it was first written. */
void toml_table_key_pos(const struct toml_value *t, size_t i, int *line,
			int *column);

/* Array access; toml_array_at returns NULL when out of range. */
size_t toml_array_count(const struct toml_value *a);
const struct toml_value *toml_array_at(const struct toml_value *a, size_t i);
/* True for an array built by [[header]] sections. */
bool toml_array_is_tables(const struct toml_value *a);

/* Scalars.  Each returns 0/NULL/false when v has another type.  Strings are
 * NUL-terminated UTF-8 but may hold U+0000 (from "\u0000"): use
 * toml_string_len when that matters. */
const char *toml_string(const struct toml_value *v);
size_t toml_string_len(const struct toml_value *v);
int64_t toml_int(const struct toml_value *v);
double toml_float(const struct toml_value *v);
bool toml_bool(const struct toml_value *v);

#endif
