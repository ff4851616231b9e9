/*
 * ui.h - the web console's files on /ui/ (server/ui/console/ and the
 * drawing modules of server/ui/lib/, embedded by scripts/gen-ui.sh).  The
 * pages read the REST facade only; docs/console.md lists their routes.
 *
 *   GET /ui/assets/<hash>/<path>  a file, cached for a year (immutable):
 *                                 <hash> is the build's content hash, any
 *                                 other hash is 404
 *   GET /ui/...                   index.html (no-store): the console routes
 *                                 its deep links (/ui/services/<name>, ...)
 *
 * Every answer carries a Content-Security-Policy that admits this origin's
 * scripts, styles and fetches only, nosniff and no-referrer.  [ui] enabled
 * = false answers 404.  main.c hands ui_handle to the front end.
 */
#ifndef SEXTANT_UI_H
#define SEXTANT_UI_H

#include <microhttpd.h>

struct req;

/* Answers a GET on /ui or /ui/...; the gate has checked the method, Host
 * and Origin.  No API key: the files hold no data, the pages send the key
 * to /api/. */
enum MHD_Result ui_handle(struct req *r);

#endif
