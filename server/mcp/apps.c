/*
 * apps.c - the MCP Apps resources (SEP-1865): ui://sextant/<app> serves the
 * embedded build/gen/apps/<app>.html as text/html;profile=mcp-app, with
 * the _meta.ui a host builds the iframe's Content-Security-Policy from.
 * The documents inline their scripts and styles and fetch nothing, so
 * they declare no origin at all: the host's restrictive default applies.
 */
#include "mcp/apps.h"

#include <string.h>

#include <jansson.h>

#include "base/embed.h"
#include "mcp/catalog.h"

/* build/gen/apps.c (scripts/gen-apps.sh, then scripts/gen-embed.sh) */
extern const struct embed_file apps_files[];
extern const size_t apps_files_count;

/* No external origins (spec: "Empty or omitted = no external
 * connections"); a border, since the drawings have no frame of their own. */
#define APPS_META                                                              \
	"{\"ui\":{\"csp\":{\"connectDomains\":[],\"resourceDomains\":[]},"     \
	"\"prefersBorder\":true}}"

static int read_app(const char *uri, void *arg, json_t **contents);

static const struct resource_def app_defs[] = {
	{.uri = "ui://sextant/trace",
	 .name = "trace",
	 .title = "Trace waterfall",
	 .description = "MCP App for get_trace and query_traces: spans as "
			"bars on a time axis, the critical path, errors",
	 .mime_type = APPS_MIME_TYPE,
	 .meta = APPS_META,
	 .read = read_app},
	{.uri = "ui://sextant/graph",
	 .name = "graph",
	 .title = "Service graph",
	 .description = "MCP App for get_mesh_graph: services and their "
			"calls, coloured by health",
	 .mime_type = APPS_MIME_TYPE,
	 .meta = APPS_META,
	 .read = read_app},
	{.uri = "ui://sextant/session",
	 .name = "session",
	 .title = "GenAI session timeline",
	 .description = "MCP App for get_session: a session's LLM calls "
			"with model, tokens and cost",
	 .mime_type = APPS_MIME_TYPE,
	 .meta = APPS_META,
	 .read = read_app},
};

/* The embedded document of app name ("trace"), NULL if none. */
static const char *
app_text(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < apps_files_count; i++) {
		const char *base = strrchr(apps_files[i].path, '/');

		base = base != NULL ? base + 1 : apps_files[i].path;
		if (strncmp(base, name, n) == 0 &&
		    strcmp(base + n, ".html") == 0)
			return apps_files[i].text;
	}
	return NULL;
}

static int
read_app(const char *uri, void *arg, json_t **contents)
{
	const struct resource_def *d = arg;
	const char *text = app_text(d->name);
	json_t *meta = json_loads(APPS_META, 0, NULL);

	*contents = NULL;
	if (text == NULL || meta == NULL) {
		json_decref(meta);
		return text == NULL ? STATUS_NOTFOUND : STATUS_NOMEM;
	}
	*contents = json_pack("[{s:s, s:s, s:s, s:o}]", "uri", uri, "mimeType",
			      APPS_MIME_TYPE, "text", text, "_meta", meta);
	return *contents != NULL ? STATUS_OK : STATUS_NOMEM;
}

json_t *
apps_capability(void)
{
	return json_pack("{s:[s]}", "mimeTypes", APPS_MIME_TYPE);
}

int
apps_register_catalog(struct catalog *cat)
{
	for (size_t i = 0; i < sizeof(app_defs) / sizeof(app_defs[0]); i++) {
		int rc;

		if (app_text(app_defs[i].name) == NULL)
			return STATUS_INVALID;
		rc = catalog_add_resource(cat, &app_defs[i],
					  (void *)&app_defs[i]);
		if (rc != STATUS_OK)
			return rc;
	}
	return STATUS_OK;
}
