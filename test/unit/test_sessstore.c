/*
 * test_sessstore.c - the session store's NOTIFY payload parser: payloads
 * come from the database, where any user may NOTIFY any channel, so
 * everything but the store's own forms is refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mcp/sessstore.h"

#define KEY "0123456789abcdef0123456789abcdef"

static void
test_parse_note(void **state)
{
	static const struct {
		const char *payload;
		int rc;
		char kind;
		const char *rest;
	} cases[] = {
		{"e " KEY " 0a1b2c3d4e5f", STATUS_OK, 'e', "0a1b2c3d4e5f"},
		{"d " KEY, STATUS_OK, 'd', ""},
		{"d " KEY " aaaaaaaaaaaa0001", STATUS_OK, 'd',
		 "aaaaaaaaaaaa0001"},
		{"u " KEY " 17", STATUS_OK, 'u', "17"},
		{"c " KEY " {\"id\": \"a b\"}", STATUS_OK, 'c',
		 "{\"id\": \"a b\"}"},
		{"a " KEY " sx-aaaaaaaa-3", STATUS_OK, 'a', "sx-aaaaaaaa-3"},
		{"x " KEY " aaaaaaaaaaaa0002", STATUS_OK, 'x',
		 "aaaaaaaaaaaa0002"},
		/* the rest is required but for d and u */
		{"e " KEY, STATUS_INVALID, 0, NULL},
		{"a " KEY " ", STATUS_INVALID, 0, NULL},
		/* not ours */
		{"", STATUS_INVALID, 0, NULL},
		{"z " KEY " x", STATUS_INVALID, 0, NULL},
		{"e" KEY " x", STATUS_INVALID, 0, NULL},
		{"e 0123456789ABCDEF0123456789abcdef x", STATUS_INVALID, 0,
		 NULL},
		{"e 0123456789abcdef0123456789abcde x", STATUS_INVALID, 0,
		 NULL},
		{"e " KEY "0 x", STATUS_INVALID, 0, NULL},
		{"e " KEY " a\nb", STATUS_INVALID, 0, NULL},
		{"e " KEY " a\x7f", STATUS_INVALID, 0, NULL},
	};
	struct sessstore_note n;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = sessstore_parse_note(cases[i].payload, &n);

		if (rc != cases[i].rc)
			fail_msg("case %zu \"%s\": %d, want %d", i,
				 cases[i].payload, rc, cases[i].rc);
		if (rc != STATUS_OK)
			continue;
		assert_int_equal(n.kind, cases[i].kind);
		assert_string_equal(n.key, KEY);
		assert_string_equal(n.rest, cases[i].rest);
	}
}

/* A rest of 255 bytes fits, 256 does not (never cut silently). */
static void
test_parse_note_bound(void **state)
{
	char payload[2 + 32 + 1 + 300];
	struct sessstore_note n;

	(void)state;
	memset(payload, 'r', sizeof(payload));
	memcpy(payload, "c " KEY " ", 35);
	payload[35 + 255] = '\0';
	assert_int_equal(sessstore_parse_note(payload, &n), STATUS_OK);
	assert_int_equal(strlen(n.rest), 255);
	payload[35 + 255] = 'r';
	payload[35 + 256] = '\0';
	assert_int_equal(sessstore_parse_note(payload, &n), STATUS_INVALID);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_note),
		cmocka_unit_test(test_parse_note_bound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
