/*
 * fuzz_jsondump.c - differential libFuzzer harness for lib/json/jsondump: it
 * must write exactly what json_dumps writes, reals aside.
 *
 * Input: JSON text, parsed with json_loadb (JSON_DECODE_ANY |
 * JSON_ALLOW_NUL, so any value and strings with NULs).  For the parsed
 * value, jsondump and json_dumps must both give NULL, or both text, with
 * JSON_COMPACT (a bare scalar: NULL from both) and with JSON_COMPACT |
 * JSON_ENCODE_ANY.  Text without a real must be the same bytes; with
 * reals (written the shortest way, json_dumps: "%.17g"), jsondump's must
 * read back equal to the value (the same doubles) and be no longer.  The first input byte also picks one element to put
 * back inside its own parent, making a loop both must refuse.  Breaks
 * abort().
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/jsondump.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Whether v holds a real (v has no loop: it was dumped). */
static int
has_real(const json_t *v)
{
	const char *key;
	json_t *c;
	size_t i;

	if (json_is_real(v))
		return 1;
	json_array_foreach(v, i, c) if (has_real(c)) return 1;
	if (json_is_object(v))
		json_object_foreach((json_t *)v, key,
				    c) if (has_real(c)) return 1;
	return 0;
}

static void
same(const json_t *v, size_t flags)
{
	char *a = jsondump(v, flags), *b = json_dumps(v, flags);

	if ((a == NULL) != (b == NULL))
		abort();
	if (a != NULL && strcmp(a, b) != 0) {
		json_t *back;

		if (!has_real(v) || strlen(a) > strlen(b))
			abort();
		back = json_loads(a, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
		if (back == NULL || !json_equal(back, v))
			abort();
		json_decref(back);
	}
	free(a);
	free(b);
}

/* The first container inside v (depth first), or NULL. */
static json_t *
first_child_container(json_t *v)
{
	size_t n = json_is_array(v) ? json_array_size(v) : 0;

	for (size_t i = 0; i < n; i++) {
		json_t *c = json_array_get(v, i);

		if (json_is_array(c) || json_is_object(c))
			return c;
	}
	if (json_is_object(v)) {
		const char *key;
		json_t *c;

		json_object_foreach(v, key, c) if (json_is_array(c) ||
						   json_is_object(c)) return c;
	}
	return NULL;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *v = json_loadb((const char *)data, size,
			       JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	json_t *child;

	if (v == NULL)
		return 0;
	same(v, JSON_COMPACT);
	same(v, JSON_COMPACT | JSON_ENCODE_ANY);
	/* A loop: v's first child container gets v appended (an array) or
	 * set under a new key (an object), then the loop is broken again. */
	child = first_child_container(v);
	if (size > 0 && (data[0] & 1) && child != NULL) {
		int ok = json_is_array(child)
				 ? json_array_append(child, v)
				 : json_object_set(child, "\x01loop", v);

		if (ok == 0) {
			char *a = jsondump(v, JSON_COMPACT | JSON_ENCODE_ANY);

			if (a != NULL)
				abort();
			same(v, JSON_COMPACT);
			if (json_is_array(child))
				json_array_remove(child,
						  json_array_size(child) - 1);
			else
				json_object_del(child, "\x01loop");
		}
	}
	json_decref(v);
	return 0;
}
