/*
 * fuzz_toml.c - libFuzzer harness for lib/conf/toml and lib/conf/config.
 *
 * Parses arbitrary bytes, walks the tree through every accessor, then
 * loads the same bytes as a config (no files, empty environment) and
 * prints it.  Crashes, leaks and sanitizer reports are the findings.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "conf/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t
walk(const struct toml_value *v)
{
	size_t n = (size_t)toml_line(v) + (size_t)toml_column(v);

	switch (toml_type(v)) {
	case TOML_TABLE:
		for (size_t i = 0; i < toml_table_count(v); i++) {
			const char *k = toml_table_key_at(v, i);
			int line, col;

			toml_table_key_pos(v, i, &line, &col);
			/* lookup by key finds the same entry */
			if (toml_table_get(v, k) != toml_table_value_at(v, i))
				abort();
			n += strlen(k) + walk(toml_table_value_at(v, i));
		}
		break;
	case TOML_ARRAY:
		for (size_t i = 0; i < toml_array_count(v); i++)
			n += walk(toml_array_at(v, i));
		break;
	case TOML_STRING:
		if (toml_string(v)[toml_string_len(v)] != '\0')
			abort();
		n += toml_string_len(v);
		break;
	case TOML_INT: n += (size_t)toml_int(v); break;
	case TOML_FLOAT: n += toml_float(v) > 0; break;
	case TOML_BOOL: n += toml_bool(v); break;
	}
	return n;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *no_env[] = {NULL};
	struct toml_value *root = NULL;
	struct toml_error terr;
	struct config *cfg = NULL, *def = NULL;
	struct config_error cerr;
	char buf[1024];
	volatile size_t sink;

	if (toml_parse((const char *)data, size, size, &root, &terr) ==
	    STATUS_OK) {
		sink = walk(root);
		(void)sink;
		toml_free(root);
	} else if (root || terr.line < 1 || terr.column < 1 || !terr.msg[0]) {
		abort();
	}

	if (config_load_text((const char *)data, size, "fuzz", no_env, &cfg,
			     &cerr) == STATUS_OK) {
		char *out = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);

		if (f) {
			config_print(cfg, f);
			fclose(f);
		}
		free(out);
		if (config_defaults(&def) == STATUS_OK)
			(void)config_diff_nonreloadable(cfg, def, buf,
							sizeof(buf));
		config_free(def);
		config_free(cfg);
	} else {
		if (cfg)
			abort();
		config_error_format(&cerr, buf, sizeof(buf));
	}
	return 0;
}
