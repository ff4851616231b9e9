/*
 * ui.c - the web console's embedded files (see ui.h): the index for every
 * page, the assets under their content hash, strict headers on both.
 */
#include "rest/ui.h"

#include <string.h>

#include "base/embed.h"
#include "core/server.h"
#include "http/http.h"

/* build/gen/ui.c (scripts/gen-ui.sh) */
extern const struct embed_file ui_files[];
extern const size_t ui_files_count;
extern const char ui_hash[];
extern const char ui_index[];

#define UI_ASSETS "/ui/assets/"

/* Self only: scripts are modules from this origin (no inline script, no
 * eval); styles from this origin, and the style properties scripts set
 * through CSSOM, which CSP does not govern; fetches to /api/ only here.
 * frame-ancestors: the console is never framed (clickjacking). */
#define UI_CSP                                                                 \
	"default-src 'self'; script-src 'self'; style-src 'self'; "            \
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; "        \
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

static const char *
ui_ctype(const char *path)
{
	static const struct {
		const char *ext, *ctype;
	} types[] = {
		{".js", "text/javascript; charset=utf-8"},
		{".css", "text/css; charset=utf-8"},
		{".svg", "image/svg+xml"},
		{".json", "application/json"},
		{".html", "text/html; charset=utf-8"},
	};
	const char *dot = strrchr(path, '.');

	for (size_t i = 0; dot != NULL && i < sizeof(types) / sizeof(types[0]);
	     i++)
		if (strcmp(dot, types[i].ext) == 0)
			return types[i].ctype;
	return "application/octet-stream";
}

static enum MHD_Result
ui_reply(struct req *r, unsigned status, const char *ctype, const char *body,
	 const char *cache)
{
	return http_reply(r, status, ctype, body, strlen(body),
			  (const char *[]){"Content-Security-Policy", UI_CSP,
					   "X-Content-Type-Options", "nosniff",
					   "Referrer-Policy", "no-referrer",
					   "Cache-Control", cache, NULL});
}

static enum MHD_Result
ui_not_found(struct req *r, const char *msg)
{
	return ui_reply(r, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", msg,
			"no-store");
}

enum MHD_Result
ui_handle(struct req *r)
{
	const char *url = r->url, *rest;
	size_t hlen = strlen(ui_hash);
	bool enabled;

	server_live_rdlock(r->srv);
	enabled = r->srv->cfg->ui.enabled;
	server_live_unlock(r->srv);
	if (!enabled)
		return ui_not_found(r, "not found: the console is off "
				       "([ui] enabled = false)\n");
	if (strcmp(url, "/ui") == 0)
		return http_reply(r, MHD_HTTP_PERMANENT_REDIRECT,
				  "text/plain; charset=utf-8", "", 0,
				  (const char *[]){"Location", "/ui/", NULL});
	if (strncmp(url, UI_ASSETS, strlen(UI_ASSETS)) != 0)
		return ui_reply(r, MHD_HTTP_OK, "text/html; charset=utf-8",
				ui_index, "no-store");
	rest = url + strlen(UI_ASSETS);
	/* an old page's hash: its files are gone, the index names the new */
	if (strncmp(rest, ui_hash, hlen) != 0 || rest[hlen] != '/')
		return ui_not_found(r, "not found: this console build is gone; "
				       "reload /ui/\n");
	rest += hlen + 1;
	for (size_t i = 0; i < ui_files_count; i++)
		if (strcmp(ui_files[i].path, rest) == 0)
			return ui_reply(r, MHD_HTTP_OK, ui_ctype(rest),
					ui_files[i].text,
					"public, max-age=31536000, immutable");
	return ui_not_found(r, "not found: no such console file\n");
}
