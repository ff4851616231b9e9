/*
 * fuzz_note.c - libFuzzer harness for sessstore_parse_note: the payloads
 * of the session store's NOTIFYs come from the database, where any user
 * may NOTIFY any channel.
 *
 * Input: the payload (NUL bytes cut it).  Checks the contract: an
 * accepted payload has a known kind, a key of 32 lowercase hex digits and
 * a printable rest that reads back as the payload; nothing else is
 * accepted.  Invariant breaks abort().
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/sessstore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *payload = malloc(size + 1), again[512];
	struct sessstore_note n;
	size_t i;

	if (payload == NULL)
		abort();
	memcpy(payload, data, size);
	payload[size] = '\0';
	if (sessstore_parse_note(payload, &n) == 0) {
		if (strchr("acdeux", n.kind) == NULL || n.kind == '\0' ||
		    strlen(n.key) != 32)
			abort();
		for (i = 0; i < 32; i++)
			if (strchr("0123456789abcdef", n.key[i]) == NULL)
				abort();
		for (i = 0; n.rest[i] != '\0'; i++)
			if ((unsigned char)n.rest[i] < 0x20 ||
			    n.rest[i] == 0x7f)
				abort();
		if (n.rest[0] == '\0' && strchr("du", n.kind) == NULL)
			abort(); /* only d and u may lack the rest */
		snprintf(again, sizeof(again), "%c %s%s%s", n.kind, n.key,
			 n.rest[0] != '\0' ? " " : "", n.rest);
		if (strcmp(again, payload) != 0)
			abort(); /* the parse lost or invented something */
	}
	free(payload);
	return 0;
}
