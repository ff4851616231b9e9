/*
 * tools.c - loads the embedded tool definitions, binds them to handlers and
 * serves tools/list pages pre-serialized per protocol revision.
 */
#include "tools.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonschema.h"

/* Emitted by scripts/gen-tooldefs.sh into build/gen/tooldefs.c. */
struct tooldef_src {
	const char *path;
	const char *text;
};
extern const struct tooldef_src tooldef_srcs[];
extern const size_t tooldef_src_count;

/* Revisions whose Tool shapes differ, oldest first. */
/* The last is served statelessly: its pages carry the result envelope. */
static const char *const revisions[] = {
	"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"};
#define NREV (sizeof(revisions) / sizeof(revisions[0]))

struct page {
	char *json;
	size_t len;
};

struct tools {
	atomic_int refs;
	struct tool_def *all; /* every definition, sorted by path */
	size_t nall;
	const struct tool_def **enabled;
	size_t nenabled;
	struct page *pages[NREV]; /* per revision, npages each */
	size_t npages;
	size_t page_size; /* server.list_page_size */
};

static bool
valid_tool_name(const char *s)
{
	size_t n = strlen(s), i;

	if (n < 1 || n > 128)
		return false;
	for (i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		      c == '.'))
			return false;
	}
	return true;
}

/* "server/tools/<set>/<name>.json" -> set, name; top level is "core". */
static int
split_path(const char *path, char *set, size_t setlen, char *name,
	   size_t namelen)
{
	const char *base = strrchr(path, '/'), *dir, *ext;

	base = base != NULL ? base + 1 : path;
	ext = strrchr(base, '.');
	if (ext == NULL || strcmp(ext, ".json") != 0)
		return STATUS_INVALID;
	snprintf(name, namelen, "%.*s", (int)(ext - base), base);
	dir = base - 1;
	if (dir > path) {
		const char *p = dir - 1;

		while (p > path && *(p - 1) != '/')
			p--;
		snprintf(set, setlen, "%.*s", (int)(dir - p), p);
		if (strcmp(set, "tools") == 0)
			snprintf(set, setlen, "core");
	} else {
		snprintf(set, setlen, "core");
	}
	return STATUS_OK;
}

static tool_fn
find_handler(const struct tool_handler *const *tables, const char *name)
{
	size_t i, j;

	for (i = 0; tables[i] != NULL; i++)
		for (j = 0; tables[i][j].name != NULL; j++)
			if (strcmp(tables[i][j].name, name) == 0)
				return tables[i][j].fn;
	return NULL;
}

static bool
strlist_has(const struct strlist *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

static bool
tool_enabled(const struct tool_def *d, const struct config *cfg)
{
	bool set_on;

	if (strlist_has(&cfg->tools.disabled, d->name))
		return false;
	if (strcmp(d->set, "conformance") == 0)
		return cfg->conformance.enabled;
	/* old names stay callable (tools_find) but are listed on request */
	if (strcmp(d->set, "deprecated") == 0)
		set_on = cfg->tools.deprecated_aliases;
	else if (cfg->tools.enabled_sets.n == 0)
		set_on = true;
	else
		set_on = strlist_has(&cfg->tools.enabled_sets, d->set);
	/* With the fixtures on, list only them: the suite checks every
	 * listed tool (MCP-DIGEST G11). */
	return set_on && !cfg->conformance.enabled;
}

static int
check_def(struct tool_def *d, const char *path, const char *text, char *err,
	  size_t errlen)
{
	char set[64], fname[160], serr[256];
	json_error_t jerr;
	json_t *v;
	const char *key;
	static const char *const allowed[] = {
		"name",		"title",       "description", "inputSchema",
		"outputSchema", "annotations", "icons",	      "execution",
		"_meta",	NULL};
	size_t i;

	if (split_path(path, set, sizeof(set), fname, sizeof(fname)) !=
	    STATUS_OK) {
		snprintf(err, errlen,
			 "%s: a tool definition must be a .json "
			 "file",
			 path);
		return STATUS_INVALID;
	}
	d->def = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
	if (d->def == NULL) {
		snprintf(err, errlen, "%s:%d:%d: %s", path, jerr.line,
			 jerr.column, jerr.text);
		return STATUS_INVALID;
	}
	if (!json_is_object(d->def)) {
		snprintf(err, errlen,
			 "%s: expected a JSON object (an MCP Tool)", path);
		return STATUS_INVALID;
	}
	json_object_foreach(d->def, key, v)
	{
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(allowed[i], key) == 0)
				break;
		if (allowed[i] == NULL) {
			snprintf(err, errlen,
				 "%s: unknown field \"%s\" in a "
				 "tool definition",
				 path, key);
			return STATUS_INVALID;
		}
	}
	d->name = json_string_value(json_object_get(d->def, "name"));
	if (d->name == NULL || !valid_tool_name(d->name)) {
		snprintf(err, errlen,
			 "%s: \"name\" must be 1-128 characters "
			 "of A-Z a-z 0-9 _ - .",
			 path);
		return STATUS_INVALID;
	}
	if (strcmp(d->name, fname) != 0) {
		snprintf(err, errlen,
			 "%s: the file name must be the tool name "
			 "(\"%s.json\")",
			 path, d->name);
		return STATUS_INVALID;
	}
	v = json_object_get(d->def, "description");
	if (!json_is_string(v) || json_string_length(v) == 0) {
		snprintf(err, errlen,
			 "%s: \"description\" must be a non-empty "
			 "string",
			 path);
		return STATUS_INVALID;
	}
	v = json_object_get(d->def, "inputSchema");
	if (!json_is_object(v) || !json_is_string(json_object_get(v, "type")) ||
	    strcmp(json_string_value(json_object_get(v, "type")), "object") !=
		    0) {
		snprintf(err, errlen,
			 "%s: \"inputSchema\" must be a JSON Schema "
			 "object with \"type\": \"object\"",
			 path);
		return STATUS_INVALID;
	}
	if (jsonschema_compile(v, &d->input, serr, sizeof(serr)) != STATUS_OK) {
		snprintf(err, errlen, "%s: inputSchema: %s", path, serr);
		return STATUS_INVALID;
	}
	v = json_object_get(d->def, "outputSchema");
	if (v != NULL) {
		if (!json_is_object(v) ||
		    !json_is_string(json_object_get(v, "type")) ||
		    strcmp(json_string_value(json_object_get(v, "type")),
			   "object") != 0) {
			snprintf(err, errlen,
				 "%s: \"outputSchema\" must have "
				 "\"type\": \"object\"",
				 path);
			return STATUS_INVALID;
		}
		if (jsonschema_compile(v, &d->output, serr, sizeof(serr)) !=
		    STATUS_OK) {
			snprintf(err, errlen, "%s: outputSchema: %s", path,
				 serr);
			return STATUS_INVALID;
		}
	}
	v = json_object_get(d->def, "annotations");
	if (v != NULL && !json_is_object(v)) {
		snprintf(err, errlen, "%s: \"annotations\" must be an object",
			 path);
		return STATUS_INVALID;
	}
	snprintf(d->set, sizeof(d->set), "%s", set);
	return STATUS_OK;
}

/* The Tool object as a revision knows it (new reference). */
static json_t *
shape_for(const json_t *def, size_t rev)
{
	json_t *t = json_deep_copy(def);

	if (t == NULL)
		return NULL;
	if (rev < 3) { /* before 2025-11-25 */
		json_object_del(t, "icons");
		json_object_del(t, "execution");
	}
	if (rev < 2) { /* before 2025-06-18 */
		json_object_del(t, "title");
		json_object_del(t, "outputSchema");
		json_object_del(t, "_meta");
	}
	if (rev < 1) /* 2024-11-05 */
		json_object_del(t, "annotations");
	return t;
}

/* Serializes one tools/list page: the tools from start on, as revision
 * rev shows them, and the cursor of the next page if there is one. */
static int
build_page(const struct tools *t, size_t rev, size_t start, struct page *out)
{
	json_t *res = json_object(), *arr = json_array();
	size_t i;
	int rc = STATUS_NOMEM;

	if (res == NULL || arr == NULL ||
	    json_object_set(res, "tools", arr) != 0)
		goto out;
	for (i = start; i < t->nenabled && i < start + t->page_size; i++)
		if (json_array_append_new(arr,
					  shape_for(t->enabled[i]->def, rev)))
			goto out;
	if (start + t->page_size < t->nenabled) {
		char cursor[32];

		snprintf(cursor, sizeof(cursor), "p%zu", start + t->page_size);
		if (json_object_set_new(res, "nextCursor",
					json_string(cursor)) != 0)
			goto out;
	}
	if (rev >= 4 && /* 2026-07-28: resultType and caching hints */
	    (json_object_set_new(res, "resultType", json_string("complete")) !=
		     0 ||
	     json_object_set_new(res, "ttlMs", json_integer(60000)) != 0 ||
	     json_object_set_new(res, "cacheScope", json_string("public")) !=
		     0))
		goto out;
	out->json = json_dumps(res, JSON_COMPACT);
	if (out->json == NULL)
		goto out;
	out->len = strlen(out->json);
	rc = STATUS_OK;
out:
	json_decref(arr);
	json_decref(res);
	return rc;
}

static int
build_pages(struct tools *t)
{
	size_t rev, p;
	int rc;

	t->npages = t->nenabled == 0
			    ? 1
			    : (t->nenabled + t->page_size - 1) / t->page_size;
	for (rev = 0; rev < NREV; rev++) {
		t->pages[rev] = calloc(t->npages, sizeof(struct page));
		if (t->pages[rev] == NULL)
			return STATUS_NOMEM;
		for (p = 0; p < t->npages; p++) {
			rc = build_page(t, rev, p * t->page_size,
					&t->pages[rev][p]);
			if (rc != STATUS_OK)
				return rc;
		}
	}
	return STATUS_OK;
}

static void
tools_free(struct tools *t)
{
	size_t i, rev;

	for (i = 0; i < t->nall; i++) {
		jsonschema_free(t->all[i].input);
		jsonschema_free(t->all[i].output);
		json_decref(t->all[i].def);
	}
	for (rev = 0; rev < NREV; rev++) {
		if (t->pages[rev] == NULL)
			continue;
		for (i = 0; i < t->npages; i++)
			free(t->pages[rev][i].json);
		free(t->pages[rev]);
	}
	free(t->all);
	free(t->enabled);
	free(t);
}

int
tools_load(const struct tool_handler *const *tables, const struct config *cfg,
	   struct tools **out, char *err, size_t errlen)
{
	struct tools *t;
	size_t i, j, k;
	int rc = STATUS_NOMEM;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (t == NULL)
		return STATUS_NOMEM;
	atomic_init(&t->refs, 1);
	t->page_size = (size_t)cfg->server.list_page_size;
	t->all = calloc(tooldef_src_count, sizeof(*t->all));
	t->enabled = calloc(tooldef_src_count, sizeof(*t->enabled));
	if (t->all == NULL || t->enabled == NULL)
		goto fail;
	for (i = 0; i < tooldef_src_count; i++) {
		struct tool_def *d = &t->all[t->nall++];

		rc = check_def(d, tooldef_srcs[i].path, tooldef_srcs[i].text,
			       err, errlen);
		if (rc != STATUS_OK)
			goto fail;
		for (j = 0; j + 1 < t->nall; j++) {
			if (strcmp(t->all[j].name, d->name) == 0) {
				snprintf(err, errlen,
					 "%s: tool \"%s\" is "
					 "defined twice",
					 tooldef_srcs[i].path, d->name);
				rc = STATUS_INVALID;
				goto fail;
			}
		}
		d->fn = find_handler(tables, d->name);
		if (d->fn == NULL) {
			snprintf(err, errlen,
				 "%s: no handler is bound to tool "
				 "\"%s\"",
				 tooldef_srcs[i].path, d->name);
			rc = STATUS_INVALID;
			goto fail;
		}
	}
	for (i = 0; tables[i] != NULL; i++) {
		for (j = 0; tables[i][j].name != NULL; j++) {
			for (k = 0; k < t->nall; k++)
				if (strcmp(t->all[k].name, tables[i][j].name) ==
				    0)
					break;
			if (k == t->nall) {
				snprintf(err, errlen,
					 "handler \"%s\" has no "
					 "definition (add server/tools/<set>/"
					 "%s.json)",
					 tables[i][j].name, tables[i][j].name);
				rc = STATUS_INVALID;
				goto fail;
			}
		}
	}
	for (i = 0; i < t->nall; i++) {
		struct tool_def *d = &t->all[i];

		if (tool_enabled(d, cfg))
			t->enabled[t->nenabled++] = d;
		else
			/* the aliases stand for the query set's tools */
			d->unlisted_callable =
				strcmp(d->set, "deprecated") == 0 &&
				!cfg->conformance.enabled &&
				!strlist_has(&cfg->tools.disabled, d->name) &&
				(cfg->tools.enabled_sets.n == 0 ||
				 strlist_has(&cfg->tools.enabled_sets,
					     "query"));
	}
	rc = build_pages(t);
	if (rc != STATUS_OK)
		goto fail;
	*out = t;
	return STATUS_OK;
fail:
	if (rc == STATUS_NOMEM)
		snprintf(err, errlen, "out of memory loading tools");
	tools_free(t);
	return rc;
}

void
tools_ref(struct tools *t)
{
	atomic_fetch_add(&t->refs, 1);
}

void
tools_unref(struct tools *t)
{
	if (t != NULL && atomic_fetch_sub(&t->refs, 1) == 1)
		tools_free(t);
}

const struct tool_def *
tools_find(const struct tools *t, const char *name)
{
	size_t i;

	for (i = 0; i < t->nenabled; i++)
		if (strcmp(t->enabled[i]->name, name) == 0)
			return t->enabled[i];
	for (i = 0; i < t->nall; i++)
		if (t->all[i].unlisted_callable &&
		    strcmp(t->all[i].name, name) == 0)
			return &t->all[i];
	return NULL;
}

size_t
tools_count(const struct tools *t)
{
	return t->nenabled;
}

const struct tool_def *
tools_at(const struct tools *t, size_t i)
{
	return i < t->nenabled ? t->enabled[i] : NULL;
}

bool
tools_same(const struct tools *a, const struct tools *b)
{
	size_t i;

	if (a->nenabled != b->nenabled)
		return false;
	for (i = 0; i < a->nenabled; i++)
		if (strcmp(a->enabled[i]->name, b->enabled[i]->name) != 0 ||
		    !json_equal(a->enabled[i]->def, b->enabled[i]->def))
			return false;
	return true;
}

const char *
tools_list_json(const struct tools *t, const char *version, size_t start,
		size_t *len)
{
	size_t rev = NREV - 2, i; /* unknown: the newest session revision */

	for (i = 0; i < NREV; i++)
		if (strcmp(revisions[i], version) == 0)
			rev = i;
	if (start % t->page_size != 0 || start / t->page_size >= t->npages)
		return NULL;
	*len = t->pages[rev][start / t->page_size].len;
	return t->pages[rev][start / t->page_size].json;
}
