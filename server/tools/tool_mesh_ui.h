/*
 * tool_mesh_ui.h - set "mesh", its part for people and UIs: get_citations
 * (documentation to cite, from an index embedded at build time) and
 * get_action_ui (navigation actions into Sextant's gateway and the
 * consoles [links] names).
 */
#ifndef SEXTANT_TOOL_MESH_UI_H
#define SEXTANT_TOOL_MESH_UI_H

#include <stddef.h>

#include "tools/tool.h"

/* {NULL, NULL}-terminated. */
extern const struct tool_handler mesh_ui_tool_handlers[];

/*
 * One entry of the citation index: a "## " section of Sextant's own
 * documentation (domain "sextant", link a repository path) or of a
 * curated file docs/citations/<domain>.md (a public link).  keywords:
 * comma-separated.  All static text.
 */
struct citation {
	const char *domain, *id, *link, *title, *keywords, *body;
};

/* build/gen/citations.c (scripts/gen-citations.sh). */
extern const struct citation mesh_ui_citations[];
extern const size_t mesh_ui_citations_count;

/* Keywords a query is cut to, and the bytes kept of each: a query is a
 * few concepts; the bounds keep the scoring's work small. */
#define CITATIONS_MAX_KEYWORDS 16
#define CITATIONS_KEYWORD_MAX  64
/* Citations in an answer, as Kiali gives. */
#define CITATIONS_TOP 3

/*
 * Kiali's score of entry c for the keywords kw[0..n) (lowercase, trimmed,
 * not empty): 2 when a keyword and the id (its '-' read as spaces) are
 * equal or one contains the other (once), then 1 for each other keyword
 * that is equal to, contains or is contained in one of the entry's
 * keywords or its id.
 */
int mesh_ui_score(const struct citation *c, char kw[][CITATIONS_KEYWORD_MAX],
		  size_t n);

/*
 * The best entries of idx[0..n) for keywords (comma-separated, any case)
 * in domain ("all" or NULL: every domain): those scoring above 0, highest
 * score first, then by title; at most max of them into out (borrowed
 * from idx) with their scores (scores may be NULL).  Returns how many;
 * 0 also when keywords hold none.
 */
size_t mesh_ui_find(const struct citation *idx, size_t n, const char *keywords,
		    const char *domain, const struct citation **out,
		    int *scores, size_t max);

/*
 * The consoles get_action_ui links into (the [links] section); NULL or
 * "" = not configured.  Borrowed.
 */
struct mesh_links {
	const char *grafana_url, *grafana_datasource, *kiali_url, *jaeger_url;
};

/*
 * get_action_ui's answer for the validated arguments args (borrowed):
 * STATUS_OK with *sc a new {"actions": [{title, kind, payload, target}],
 * "errors"?} (target "sextant" for a path of the gateway, else the
 * console's name); STATUS_INVALID with a message for the model in err
 * (errlen bytes) and *sc NULL; STATUS_NOMEM.
 */
int mesh_ui_actions(const struct mesh_links *links, const json_t *args,
		    json_t **sc, char *err, size_t errlen) WUR;

#endif
