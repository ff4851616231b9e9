/*
 * tools.c - loads the embedded tool definitions, binds them to handlers,
 * indexes their x-mcp-header parameters and serves tools/list pages
 * pre-serialized per protocol revision.
 */
#include "mcp/tools.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "json/jsonschema.h"

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
	/* per revision, npages each: [0] without _meta.ui, [1] with it for
	 * clients of the MCP Apps extension */
	struct page *pages[NREV][2];
	size_t npages;
	/* the same without the write tools (callers lacking scope_write),
	 * built only when some listed tool needs it, else NULL */
	const struct tool_def **readable;
	size_t nreadable;
	struct page *ro_pages[NREV][2];
	size_t ro_npages;
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

/*
 * The sets listed when [tools] enabled_sets is empty.  Left out: the
 * source-specific eBPF tools ("ebpf": query_metrics and query_traces
 * answer from every source; experts name the set), the Kiali UI helpers
 * ("kiali": get_citations and get_action_ui serve a chat UI, not an agent),
 * and manage_istio_config ("istio") unless a Kubernetes API is configured
 * or the gateway runs in a pod.
 */
static bool
set_by_default(const char *set, const struct config *cfg)
{
	if (strcmp(set, "ebpf") == 0 || strcmp(set, "kiali") == 0)
		return false;
	if (strcmp(set, "istio") == 0)
		return (cfg->kubernetes.api_url != NULL &&
			cfg->kubernetes.api_url[0] != '\0') ||
		       getenv("KUBERNETES_SERVICE_HOST") != NULL;
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
	/* a tool whose only source is a metrics instance is listed with one
	 * (instances need a restart; a reload that adds one lists the tool,
	 * which answers "not configured" until then) */
	if (strcmp(d->set, "grafana") == 0 && cfg->instances.n == 0)
		return false;
	/* old names stay callable (tools_find) but are listed on request */
	if (strcmp(d->set, "deprecated") == 0)
		set_on = cfg->tools.deprecated_aliases;
	else if (cfg->tools.enabled_sets.n == 0)
		set_on = set_by_default(d->set, cfg);
	else
		set_on = strlist_has(&cfg->tools.enabled_sets, d->set);
	/* With the fixtures on, list only them: the suite checks every
	 * listed tool (MCP-DIGEST G11). */
	return set_on && !cfg->conformance.enabled;
}

/* ---- x-mcp-header (SEP-2243) --------------------------------------- */

struct hwalk {
	struct tool_header *v;
	size_t n, cap;
	const char *path[JSONSCHEMA_MAX_DEPTH + 1]; /* property names */
	size_t depth;
	char ptr[512]; /* JSON pointer of the schema walked, for messages */
	size_t plen;
	char *err;
	size_t errlen;
};

PRINTF_LIKE(2, 3)
static int
hfail(struct hwalk *w, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(w->err, w->errlen, "%s: ", w->ptr);

	if (n >= 0 && (size_t)n < w->errlen) {
		va_start(ap, fmt);
		vsnprintf(w->err + n, w->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return STATUS_INVALID;
}

/* RFC 9110 section 5.6.2: token = 1*tchar. */
static bool
header_token(const char *s)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~";

	if (*s == '\0')
		return false;
	for (; *s != '\0'; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		      (*s >= '0' && *s <= '9') || strchr(tchar, *s) != NULL))
			return false;
	return true;
}

/* "a.b" for messages; caller frees. */
static char *
path_text(const char *const *path, size_t depth)
{
	size_t len = 0, i, k;
	char *p;

	for (i = 0; i < depth; i++)
		len += strlen(path[i]) + 1;
	if ((p = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0, len = 0; i < depth; i++) {
		if (i > 0)
			p[len++] = '.';
		k = strlen(path[i]);
		memcpy(p + len, path[i], k);
		len += k;
	}
	p[len] = '\0';
	return p;
}

/* The annotation name on the property schema j, reached through
 * properties alone (w->path names it). */
static int
add_header(struct hwalk *w, const json_t *j, const json_t *name)
{
	static const char *const types[] = {"string", "integer", "boolean"};
	static const char prefix[] = "Mcp-Param-";
	const char *type = json_string_value(json_object_get(j, "type"));
	const char *nm = json_string_value(name);
	struct tool_header *h;
	size_t i, t;

	if (!json_is_string(name) || !header_token(nm))
		return hfail(w,
			     "\"x-mcp-header\" must be a non-empty header name "
			     "of letters, digits and !#$%%&'*+-.^_`|~ (an RFC "
			     "9110 token), got %s%.80s%s",
			     nm ? "\"" : "", nm ? nm : "a non-string",
			     nm ? "\"" : "");
	for (t = 0; type != NULL && t < 3; t++)
		if (strcmp(type, types[t]) == 0)
			break;
	if (type == NULL || t == 3)
		return hfail(
			w,
			"\"x-mcp-header\" \"%s\" needs a property of "
			"\"type\" \"string\", \"integer\" or \"boolean\" "
			"(one type; number, object, array and null are not "
			"allowed), got %s%.40s%s",
			nm, type ? "\"" : "", type ? type : "no single type",
			type ? "\"" : "");
	for (i = 0; i < w->n; i++)
		if (strcasecmp(w->v[i].header + sizeof(prefix) - 1, nm) == 0)
			return hfail(w,
				     "\"x-mcp-header\" \"%s\" is already used "
				     "by property \"%s\" (names must be unique "
				     "ignoring case)",
				     nm, w->v[i].arg);
	if (w->n == w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 4;

		h = realloc(w->v, cap * sizeof(*h));
		if (h == NULL)
			return STATUS_NOMEM;
		w->v = h;
		w->cap = cap;
	}
	h = &w->v[w->n++]; /* freed with the rest from here on */
	*h = (struct tool_header){.depth = w->depth,
				  .type = (enum tool_header_type)t};
	h->path = malloc(w->depth * sizeof(*h->path));
	h->arg = path_text(w->path, w->depth);
	h->header = malloc(sizeof(prefix) + strlen(nm));
	if (h->path == NULL || h->arg == NULL || h->header == NULL)
		return STATUS_NOMEM;
	memcpy(h->path, w->path, w->depth * sizeof(*h->path));
	memcpy(h->header, prefix, sizeof(prefix) - 1);
	memcpy(h->header + sizeof(prefix) - 1, nm, strlen(nm) + 1);
	return STATUS_OK;
}

static int hwalk_schema(struct hwalk *w, const json_t *j, bool chain,
			bool root);

/* Walks j found at <pointer>/k1[/k2] (RFC 6901 escapes, cut to fit). */
static int
hwalk_at(struct hwalk *w, const json_t *j, const char *k1, const char *k2,
	 bool chain)
{
	size_t old = w->plen;
	int rc;

	for (const char *k = k1; k != NULL; k = k == k1 ? k2 : NULL) {
		if (w->plen + 1 < sizeof(w->ptr))
			w->ptr[w->plen++] = '/';
		for (const char *p = k; *p != '\0'; p++) {
			const char *e = *p == '~'   ? "~0"
					: *p == '/' ? "~1"
						    : NULL;

			for (size_t i = 0; i < (e ? 2u : 1u); i++)
				if (w->plen + 1 < sizeof(w->ptr))
					w->ptr[w->plen++] = e ? e[i] : *p;
		}
	}
	w->ptr[w->plen] = '\0';
	rc = hwalk_schema(w, j, chain, false);
	if (rc == STATUS_OK) {
		w->plen = old;
		w->ptr[old] = '\0';
	}
	return rc;
}

/*
 * chain: j is a property schema reached from the root through properties
 * alone; root: j is the root, whose properties start the chain.  Follows every subschema keyword lib/json/jsonschema compiles (the
 * compile before this refuses the others), so an annotation anywhere a
 * schema can be is seen; values of other keywords (default, const,
 * examples) are data, not schemas.
 */
static int
hwalk_schema(struct hwalk *w, const json_t *j, bool chain, bool root)
{
	static const char *const one[] = {
		"items", "additionalProperties", "not", "if", "then", "else"};
	static const char *const many[] = {"allOf", "anyOf", "oneOf"};
	static const char *const maps[] = {"$defs", "definitions"};
	const json_t *v, *sub, *xh;
	const char *k;
	char idx[24];
	size_t i, a;
	int rc;

	if (!json_is_object(j))
		return STATUS_OK;
	if ((xh = json_object_get(j, "x-mcp-header")) != NULL) {
		if (!chain)
			return hfail(
				w, "\"x-mcp-header\" is allowed only on a "
				   "property reached from the root through "
				   "\"properties\" alone (not through items, "
				   "allOf/anyOf/oneOf/not, if/then/else, $ref "
				   "or $defs, nor on the root)");
		if ((rc = add_header(w, j, xh)) != STATUS_OK)
			return rc;
	}
	json_object_foreach(json_object_get(j, "properties"), k, sub)
	{
		if (w->depth > JSONSCHEMA_MAX_DEPTH) /* compiled: never */
			return hfail(w, "properties nest too deep");
		w->path[w->depth++] = k;
		rc = hwalk_at(w, sub, "properties", k, chain || root);
		w->depth--;
		if (rc != STATUS_OK)
			return rc;
	}
	for (i = 0; i < sizeof(one) / sizeof(one[0]); i++)
		if ((v = json_object_get(j, one[i])) != NULL &&
		    (rc = hwalk_at(w, v, one[i], NULL, false)) != STATUS_OK)
			return rc;
	for (i = 0; i < sizeof(many) / sizeof(many[0]); i++)
		json_array_foreach(json_object_get(j, many[i]), a, sub)
		{
			snprintf(idx, sizeof(idx), "%zu", a);
			if ((rc = hwalk_at(w, sub, many[i], idx, false)) !=
			    STATUS_OK)
				return rc;
		}
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		json_object_foreach(json_object_get(j, maps[i]), k, sub)
		{
			if ((rc = hwalk_at(w, sub, maps[i], k, false)) !=
			    STATUS_OK)
				return rc;
		}
	return STATUS_OK;
}

int
tools_headers_index(const json_t *schema, struct tool_header **out, size_t *n,
		    char *err, size_t errlen)
{
	struct hwalk *w = calloc(1, sizeof(*w));
	int rc;

	*out = NULL;
	*n = 0;
	if (w == NULL)
		return STATUS_NOMEM;
	w->err = err;
	w->errlen = errlen;
	w->ptr[0] = '#';
	w->plen = 1;
	/* the root is no property: an annotation there is refused */
	rc = hwalk_schema(w, schema, false, true);
	if (rc == STATUS_NOMEM)
		snprintf(err, errlen, "out of memory indexing x-mcp-header");
	if (rc == STATUS_OK) {
		*out = w->v;
		*n = w->n;
	} else {
		tools_headers_free(w->v, w->n);
	}
	free(w);
	return rc;
}

void
tools_headers_free(struct tool_header *h, size_t n)
{
	for (size_t i = 0; h != NULL && i < n; i++) {
		free(h[i].header);
		free(h[i].arg);
		free(h[i].path);
	}
	free(h);
}

const json_t *
tools_header_arg(const struct tool_header *h, const json_t *args)
{
	const json_t *v = args;

	for (size_t i = 0; i < h->depth; i++)
		if (!json_is_object(v) ||
		    (v = json_object_get(v, h->path[i])) == NULL)
			return NULL;
	return json_is_null(v) ? NULL : v;
}

/* SH "Server Validation": integers SHOULD compare numerically, so "42.0"
 * is 42.  Decimal notation only (strtod also reads hex, inf and nan). */
static bool
integer_matches(const json_t *value, const char *text)
{
	char *end;
	long long i;
	double d;

	if (!json_is_number(value) || text[0] == '\0' ||
	    text[strspn(text, "0123456789+-.eE")] != '\0')
		return false;
	errno = 0;
	i = strtoll(text, &end, 10);
	if (*end == '\0' && errno == 0 && json_is_integer(value))
		return i == json_integer_value(value);
	errno = 0;
	d = strtod(text, &end);
	return *end == '\0' && errno == 0 && isfinite(d) &&
	       d == json_number_value(value);
}

bool
tools_header_matches(const struct tool_header *h, const json_t *value,
		     const char *text)
{
	switch (h->type) {
	case TOOL_HEADER_STRING:
		return json_is_string(value) &&
		       json_string_length(value) == strlen(text) &&
		       memcmp(json_string_value(value), text, strlen(text)) ==
			       0;
	case TOOL_HEADER_INTEGER: return integer_matches(value, text);
	case TOOL_HEADER_BOOLEAN:
		return (json_is_true(value) && strcmp(text, "true") == 0) ||
		       (json_is_false(value) && strcmp(text, "false") == 0);
	}
	return false;
}

/* ---- definitions ---------------------------------------------------- */

static int
check_def(struct tool_def *d, const char *path, const char *text, char *err,
	  size_t errlen)
{
	char set[64], fname[160], serr[256], herr[600];
	json_error_t jerr;
	json_t *v;
	const char *key;
	static const char *const allowed[] = {
		"name",		"title",       "description", "inputSchema",
		"outputSchema", "annotations", "icons",	      "execution",
		"_meta",	NULL};
	size_t i;
	int rc;

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
	rc = tools_headers_index(v, &d->headers, &d->nheaders, herr,
				 sizeof(herr));
	if (rc != STATUS_OK) {
		snprintf(err, errlen, "%s: inputSchema: %s", path, herr);
		return rc;
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

/* The Tool object as a revision knows it (new reference); _meta.ui (MCP
 * Apps, SEP-1865) only for a client that declared the extension, as the
 * spec advises, so that the others' tools/list does not carry it. */
static json_t *
shape_for(const json_t *def, size_t rev, bool ui)
{
	json_t *t = json_deep_copy(def);

	if (t == NULL)
		return NULL;
	if (!ui) {
		json_t *meta = json_object_get(t, "_meta");

		json_object_del(meta, "ui");
		if (meta != NULL && json_object_size(meta) == 0)
			json_object_del(t, "_meta");
	}
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
	if (rev >= 2) { /* the top-level title says it: once is enough */
		json_t *a = json_object_get(t, "annotations");
		const char *title =
			json_string_value(json_object_get(t, "title"));
		const char *again =
			json_string_value(json_object_get(a, "title"));

		if (title != NULL && again != NULL && strcmp(title, again) == 0)
			json_object_del(a, "title");
	}
	return t;
}

/* Serializes one tools/list page: the tools from start on, as revision
 * rev shows them (with _meta.ui if ui), and the cursor of the next page if
 * there is one. */
static int
build_page(const struct tools *t, const struct tool_def *const *list, size_t n,
	   size_t rev, bool ui, size_t start, struct page *out)
{
	json_t *res = json_object(), *arr = json_array();
	size_t i;
	int rc = STATUS_NOMEM;

	if (res == NULL || arr == NULL ||
	    json_object_set(res, "tools", arr) != 0)
		goto out;
	for (i = start; i < n && i < start + t->page_size; i++)
		if (json_array_append_new(arr,
					  shape_for(list[i]->def, rev, ui)))
			goto out;
	if (start + t->page_size < n) {
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

/* The pages of list[0..n) into pages, *npages of them. */
static int
build_pages_of(struct tools *t, const struct tool_def *const *list, size_t n,
	       struct page *pages[NREV][2], size_t *npages)
{
	size_t rev, ui, p;
	int rc;

	*npages = n == 0 ? 1 : (n + t->page_size - 1) / t->page_size;
	for (rev = 0; rev < NREV; rev++)
		for (ui = 0; ui < 2; ui++) {
			pages[rev][ui] = calloc(*npages, sizeof(struct page));
			if (pages[rev][ui] == NULL)
				return STATUS_NOMEM;
			for (p = 0; p < *npages; p++) {
				rc = build_page(t, list, n, rev, ui == 1,
						p * t->page_size,
						&pages[rev][ui][p]);
				if (rc != STATUS_OK)
					return rc;
			}
		}
	return STATUS_OK;
}

static int
build_pages(struct tools *t)
{
	size_t i;
	int rc;

	rc = build_pages_of(t, t->enabled, t->nenabled, t->pages, &t->npages);
	for (i = 0; rc == STATUS_OK && i < t->nenabled; i++)
		if (t->enabled[i]->write)
			break;
	if (rc != STATUS_OK || i == t->nenabled)
		return rc;
	t->readable = calloc(t->nenabled, sizeof(*t->readable));
	if (t->readable == NULL)
		return STATUS_NOMEM;
	for (i = 0; i < t->nenabled; i++)
		if (!t->enabled[i]->write)
			t->readable[t->nreadable++] = t->enabled[i];
	return build_pages_of(t, t->readable, t->nreadable, t->ro_pages,
			      &t->ro_npages);
}

static void
free_pages(struct page *pages[NREV][2], size_t npages)
{
	size_t rev, ui, i;

	for (rev = 0; rev < NREV; rev++)
		for (ui = 0; ui < 2; ui++) {
			if (pages[rev][ui] == NULL)
				continue;
			for (i = 0; i < npages; i++)
				free(pages[rev][ui][i].json);
			free(pages[rev][ui]);
		}
}

static void
tools_free(struct tools *t)
{
	size_t i;

	for (i = 0; i < t->nall; i++) {
		jsonschema_free(t->all[i].input);
		jsonschema_free(t->all[i].output);
		tools_headers_free(t->all[i].headers, t->all[i].nheaders);
		json_decref(t->all[i].def);
	}
	free_pages(t->pages, t->npages);
	free_pages(t->ro_pages, t->ro_npages);
	free(t->readable);
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

		d->write = strlist_has(&cfg->oauth.write_tools, d->name) ||
			   strlist_has(&cfg->oauth.write_tools, d->set);
		if (tool_enabled(d, cfg))
			t->enabled[t->nenabled++] = d;
		else
			/* the aliases stand for the ebpf set's tools, and keep
			 * working where the query set is on */
			d->unlisted_callable =
				strcmp(d->set, "deprecated") == 0 &&
				!cfg->conformance.enabled &&
				!strlist_has(&cfg->tools.disabled, d->name) &&
				(cfg->tools.enabled_sets.n == 0 ||
				 strlist_has(&cfg->tools.enabled_sets,
					     "query") ||
				 strlist_has(&cfg->tools.enabled_sets, "ebpf"));
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
	return tools_list_json_ui(t, version, false, start, len);
}

const char *
tools_list_json_ui(const struct tools *t, const char *version, bool ui,
		   size_t start, size_t *len)
{
	return tools_list_json_for(t, version, ui, false, start, len);
}

const char *
tools_list_json_for(const struct tools *t, const char *version, bool ui,
		    bool read_only, size_t start, size_t *len)
{
	size_t rev = NREV - 2, i; /* unknown: the newest session revision */
	struct page *const(*pages)[2] = t->pages;
	size_t npages = t->npages;

	if (read_only && t->readable != NULL) {
		pages = t->ro_pages;
		npages = t->ro_npages;
	}
	for (i = 0; i < NREV; i++)
		if (strcmp(revisions[i], version) == 0)
			rev = i;
	if (start % t->page_size != 0 || start / t->page_size >= npages)
		return NULL;
	*len = pages[rev][ui][start / t->page_size].len;
	return pages[rev][ui][start / t->page_size].json;
}
