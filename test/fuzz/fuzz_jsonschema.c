/*
 * fuzz_jsonschema.c - libFuzzer harness for lib/json/jsonschema: the input is a
 * schema and an instance split at the first NUL (or newline); both are
 * compiled, validated and defaulted, with and without messages.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "json/jsonschema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *cut = memchr(text, '\0', size);
	struct jsonschema *s = NULL;
	struct jsonschema_error verr;
	json_t *schema = NULL, *inst = NULL, *copy = NULL;
	char err[256];
	size_t slen;

	if (cut == NULL)
		cut = memchr(text, '\n', size);
	slen = cut ? (size_t)(cut - text) : size;
	schema = json_loadb(text, slen, JSON_DECODE_ANY, NULL);
	if (schema == NULL)
		goto out;
	if (jsonschema_compile(schema, &s, err, sizeof(err)) != STATUS_OK) {
		if (s != NULL || strlen(err) == 0)
			__builtin_trap();
		goto out;
	}
	inst = cut ? json_loadb(cut + 1, size - slen - 1,
				JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL)
		   : NULL;
	if (inst == NULL)
		goto out;
	{
		int a = jsonschema_validate(s, inst, &verr);
		int b = jsonschema_validate(s, inst, NULL);

		/* the verdict must not depend on asking for a message */
		if (a != b || (a == STATUS_INVALID && verr.msg[0] == '\0'))
			__builtin_trap();
	}
	copy = json_deep_copy(inst);
	if (copy != NULL && jsonschema_apply_defaults(s, copy) == STATUS_OK)
		(void)jsonschema_validate(s, copy, &verr);
out:
	json_decref(copy);
	json_decref(inst);
	json_decref(schema);
	jsonschema_free(s);
	return 0;
}
