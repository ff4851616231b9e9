/*
 * fuzz_redact.c - libFuzzer harness for lib/base/redact.
 *
 * Input: one flags byte (bit 0: e-mails on, bit 1: value patterns on),
 * then text, taken both as a C string for redact_text and as JSON for
 * redact_json.  Checks, against glibc's regexec as an independent oracle:
 * the output holds no e-mail address and no match of a value pattern,
 * "unchanged" (NULL) only when the input held none, valid UTF-8 in gives
 * valid UTF-8 out, every member under a matching key is "[REDACTED]", and
 * the result is deterministic.  Invariant breaks abort().
 */
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/redact.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Inputs stay under the scan limit, and the regex oracle is quadratic. */
#define INPUT_MAX 8192

static const char *const keys[] = {
	"authorization", "password", "passwd", "secret",
	"token",	 "api_key",  "cookie", "set-cookie",
};
static const char *const values[] = {"sk-[a-z0-9]{8,}", "pin=[0-9]+"};
static const char email_re[] =
	"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}";

static struct redact *red[4]; /* by flags */
static regex_t oracle[3];     /* e-mail, then the value patterns */

static void
init(void)
{
	char err[256];

	for (int f = 0; f < 4; f++)
		if (redact_new(keys, 8, values, f & 2 ? 2 : 0, f & 1, &red[f],
			       err, sizeof(err)) != STATUS_OK)
			abort();
	if (regcomp(&oracle[0], email_re, REG_EXTENDED | REG_ICASE) != 0 ||
	    regcomp(&oracle[1], values[0], REG_EXTENDED | REG_ICASE) != 0 ||
	    regcomp(&oracle[2], values[1], REG_EXTENDED | REG_ICASE) != 0)
		abort();
}

static bool
valid_utf8(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s, *end = u + n;

	while (u < end) {
		size_t len;
		unsigned char lo = 0x80, hi = 0xbf;

		if (*u < 0x80) {
			u++;
			continue;
		}
		if (*u >= 0xc2 && *u <= 0xdf)
			len = 2;
		else if (*u >= 0xe0 && *u <= 0xef)
			len = 3;
		else if (*u >= 0xf0 && *u <= 0xf4)
			len = 4;
		else
			return false;
		if ((size_t)(end - u) < len)
			return false;
		if (*u == 0xe0)
			lo = 0xa0;
		else if (*u == 0xed)
			hi = 0x9f;
		else if (*u == 0xf0)
			lo = 0x90;
		else if (*u == 0xf4)
			hi = 0x8f;
		if (u[1] < lo || u[1] > hi)
			return false;
		for (size_t i = 2; i < len; i++)
			if (u[i] < 0x80 || u[i] > 0xbf)
				return false;
		u += len;
	}
	return true;
}

/* True when s[0..n) holds something flags say must be hidden. */
static bool
has_secret(int flags, const char *s, size_t n)
{
	for (int i = 0; i < 3; i++) {
		regmatch_t pm = {.rm_so = 0, .rm_eo = (regoff_t)n};

		if (i == 0 && !(flags & 1))
			continue;
		if (i > 0 && !(flags & 2))
			continue;
		if (regexec(&oracle[i], s, 1, &pm, REG_STARTEND) == 0 &&
		    pm.rm_eo > pm.rm_so)
			return true;
	}
	return false;
}

/* Every string is clean and valid, every matching key hidden.  jansson
 * parses at most 2048 levels, so recursion is bounded here. */
static void
check_tree(int flags, const json_t *v)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_string(v)) {
		if (!valid_utf8(json_string_value(v), json_string_length(v)) ||
		    has_secret(flags, json_string_value(v),
			       json_string_length(v)))
			abort();
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, item)
		{
			if (redact_key(red[flags], key) &&
			    (!json_is_string(item) ||
			     strcmp(json_string_value(item), REDACT_MARK) != 0))
				abort();
			check_tree(flags, item);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, item) check_tree(flags, item);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int flags;
	char *text, *a, *b;
	size_t len;
	json_t *j, *o;

	if (red[0] == NULL)
		init();
	if (size < 1 || size > INPUT_MAX)
		return 0;
	flags = data[0] & 3;
	text = malloc(size);
	if (text == NULL)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	len = strlen(text);

	a = redact_text(red[flags], text);
	b = redact_text(red[flags], text);
	if ((a == NULL) != (b == NULL) || (a != NULL && strcmp(a, b) != 0))
		abort();
	if (a == NULL) {
		if (flags != 0 && has_secret(flags, text, len))
			abort();
	} else {
		if (flags == 0 || has_secret(flags, a, strlen(a)) ||
		    strstr(a, REDACT_MARK) == NULL ||
		    strlen(a) > len + (len + 1) * strlen(REDACT_MARK))
			abort();
		if (valid_utf8(text, len) && !valid_utf8(a, strlen(a)))
			abort();
	}
	free(a);
	free(b);

	/* the whole input as JSON (NULs allowed in strings) */
	j = json_loadb((const char *)data + 1, size - 1,
		       JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	if (j != NULL) {
		if (redact_json(red[flags], j) != STATUS_OK)
			abort();
		check_tree(flags, j);
		json_decref(j);
	}
	/* the text as a key and as a value */
	if (valid_utf8(text, len)) {
		o = json_pack("{s:s, s:[s]}", text, text, "v", text);
		if (o == NULL)
			abort();
		if (redact_json(red[flags], o) != STATUS_OK)
			abort();
		check_tree(flags, o);
		if (redact_key(red[flags], text) &&
		    strcmp(json_string_value(json_object_get(o, text)),
			   REDACT_MARK) != 0)
			abort();
		json_decref(o);
	}
	free(text);
	return 0;
}
