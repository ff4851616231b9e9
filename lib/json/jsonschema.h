/*
 * jsonschema.h - JSON Schema validator over jansson values: a 2020-12
 * subset (draft-07 accepted), used to check MCP tools/call arguments
 * against a tool's inputSchema and structuredContent against outputSchema.
 *
 * A schema is compiled once (jsonschema_compile), which checks the schema
 * itself, and is then immutable: validate and apply_defaults may run on
 * any number of threads at once without locking.
 *
 * Supported keywords:
 *   type (string or array; "integer" accepts integral reals such as 1.0),
 *   enum, const (numbers compare by value: 1 == 1.0),
 *   minimum, maximum, exclusiveMinimum, exclusiveMaximum (numbers),
 *   multipleOf, minLength, maxLength (Unicode code points), pattern,
 *   format, items (one schema), minItems, maxItems, uniqueItems,
 *   properties, required, additionalProperties (boolean or schema),
 *   allOf, anyOf, oneOf, not, if/then/else, $defs, definitions, default,
 *   and $ref to a JSON pointer inside the same document ("#",
 *   "#/$defs/<name>", "#/definitions/<name>", any "#/..." that names a
 *   subschema) or, with 2020-12, to a plain-name $anchor ("#<name>").
 * $schema may be absent, 2020-12 or draft-07; with draft-07, $ref
 * overrides its sibling keywords and $anchor is an unknown keyword.
 * then/else without if have no effect (but must still compile).
 * Annotations (title, description, examples, $comment, $id, readOnly,
 * deprecated, ...) and unknown keywords are ignored.  Validation keywords
 * outside this list (prefixItems, contains, patternProperties,
 * propertyNames, min/maxProperties, dependentRequired, dependentSchemas,
 * dependencies, additionalItems, unevaluated*, $dynamicRef, items as an
 * array) are refused at compile (STATUS_UNSUPPORTED or
 * STATUS_INVALID) rather than silently ignored.  format checks
 * "date-time" and "date" (RFC 3339 section 5.6); other formats are
 * accepted unchecked.  Patterns are ECMA-262 regular expressions
 * translated to POSIX EREs: \d \w \s \D \W \S, classes (ASCII only),
 * lazy quantifiers and (?:...) work; lookaround, backreferences, \p{...},
 * \x/\u escapes and quantifiers with nothing to repeat are refused at
 * compile.  \s is ASCII whitespace only and "." also matches a newline.
 */
#ifndef SEXTANT_JSONSCHEMA_H
#define SEXTANT_JSONSCHEMA_H

#include <jansson.h>
#include <stddef.h>

#include "base/status.h"

/*
 * Nesting bound, for schemas at compile and instances at validation: deep
 * enough for any tool schema, shallow enough that recursion on hostile
 * input cannot exhaust a worker thread's stack.
 */
#define JSONSCHEMA_MAX_DEPTH 64

/* A compiled schema: opaque, immutable, safe to share between threads. */
struct jsonschema;

/*
 * Why an instance failed.  All strings are NUL-terminated valid UTF-8,
 * truncated with "..." when too long.
 *   path:     where, as a dotted path from the root: "filters.status",
 *             "items[2]", "a[\"key with spaces\"]"; "" is the root.  For a
 *             missing or unexpected property it names that property.
 *   expected: what was expected, e.g. "an integer >= 1 and <= 1000",
 *             "one of \"15m\", \"1h\"", "property \"service\"".
 *   received: the offending value as JSON (at most ~60 characters), ""
 *             when the value is absent (missing property).
 *   msg:      the full message for the client, e.g.
 *             "limit: expected an integer >= 1 and <= 1000, got 0".
 */
struct jsonschema_error {
	char path[256];
	char expected[256];
	char received[128];
	char msg[640];
};

/*
 * Compiles schema (borrowed for the call only; nothing of it is kept) into
 * *out, which the caller frees with jsonschema_free().  Checks the schema
 * itself: types of known keywords, $ref targets, $anchor names (unique
 * per document), regular expressions, nesting (JSONSCHEMA_MAX_DEPTH) and
 * $ref loops that would never descend into the instance.
 * Returns STATUS_OK; STATUS_INVALID for a malformed schema;
 * STATUS_UNSUPPORTED for a $schema dialect other than 2020-12 or draft-07,
 * a non-local $ref or an unsupported keyword or regex feature;
 * STATUS_LIMIT when the schema is too deep or large; STATUS_NOMEM.  On
 * failure *out is NULL and err (may be NULL) holds a message naming the
 * schema location as a JSON pointer: "#/properties/limit: \"minimum\" must
 * be a number, got \"1\"".
 */
int jsonschema_compile(const json_t *schema, struct jsonschema **out, char *err,
		       size_t errlen) WUR;

/* Frees a compiled schema.  Accepts NULL. */
void jsonschema_free(struct jsonschema *s);

/*
 * Validates instance (borrowed, not modified) against s.  Stops at the
 * first error, found in a fixed order: type, const, enum, then the
 * keywords of the value's type (for objects: required, properties in
 * schema order, then additional properties in instance order), then
 * $ref, allOf, anyOf, oneOf, not, if/then/else.  An error from the
 * then or else branch ends its msg with which branch applied and why.
 * Returns STATUS_OK; STATUS_INVALID with *verr filled; STATUS_LIMIT when
 * the instance nests deeper than JSONSCHEMA_MAX_DEPTH or validation would
 * take too long (verr says so); STATUS_NOMEM.  verr may be NULL when only
 * the verdict is wanted (cheaper: no message is built).
 */
int jsonschema_validate(const struct jsonschema *s, const json_t *instance,
			struct jsonschema_error *verr) WUR;

/*
 * Sets missing properties that have a "default" in their schema to a copy
 * of that default, in place, recursing into objects and arrays that are
 * present (through properties, additionalProperties, items, $ref and
 * allOf; not anyOf/oneOf/if/then/else, which depend on the value).  An inserted default is
 * a deep copy; only a later $ref or allOf branch may fill defaults inside
 * it.  Changes instance and
 * the containers nested in it, so they must not be shared with another
 * thread.  Returns STATUS_OK, STATUS_LIMIT (nesting deeper than
 * JSONSCHEMA_MAX_DEPTH; defaults found so far stay applied) or
 * STATUS_NOMEM.
 */
int jsonschema_apply_defaults(const struct jsonschema *s, json_t *instance) WUR;

#endif
