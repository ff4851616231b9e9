/*
 * fuzz_jsonload.c - differential libFuzzer harness for lib/json/jsonload: the
 * fast path must never accept what json_loadb refuses, nor build anything
 * but what json_loadb builds.
 *
 * Input: the bytes to parse.  When jsonload_fast gives a value, json_loadb
 * (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY) must give one too, and both
 * must serialize to the same text (values, key order, integer or real).
 * jsonload() must succeed exactly when json_loadb does.  Breaks abort().
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json/jsonload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *
dump(const json_t *v)
{
	char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);

	if (s == NULL)
		abort();
	return s;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data;
	json_error_t err;
	json_t *fast = jsonload_fast(s, size);
	json_t *ref = json_loadb(
		s, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
	json_t *full = jsonload(s, size, &err);

	if ((full == NULL) != (ref == NULL))
		abort();
	if (fast != NULL) {
		char *a, *b;

		if (ref == NULL)
			abort();
		a = dump(fast);
		b = dump(ref);
		if (strcmp(a, b) != 0 || !json_equal(fast, ref))
			abort();
		free(a);
		free(b);
	}
	json_decref(fast);
	json_decref(ref);
	json_decref(full);
	return 0;
}
