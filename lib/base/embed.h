/* embed.h - a text file compiled into the binary by scripts/gen-embed.sh
 * (the migrations for lib/pg/migrate, server/mcp/skills/ for server/skills):
 * the generated source defines `const struct embed_file SYMBOL[]` and
 * `const size_t SYMBOL_count`. */
#ifndef SEXTANT_EMBED_H
#define SEXTANT_EMBED_H

#include <stddef.h>

struct embed_file {
	const char *
		path; /* as given to gen-embed.sh, e.g. "migrations/0001_x.sql" */
	const char *text; /* the whole file, NUL-terminated */
};

#endif
