/*
 * dispatch.c - MCP methods: lifecycle, tools, resources, prompts,
 * completion and logging, on top of the JSON-RPC framing in rpc.c.
 *
 * Quick methods are answered inline on the MHD thread that parsed the
 * request; tools/call becomes a job (call.c).  Which fields a result
 * carries follows the session's negotiated revision.
 */
#include "mcp/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/seal.h"
#include "core/server.h"
#include "json/jsonschema.h"
#include "mcp/apps.h"
#include "mcp/call.h"
#include "mcp/catalog.h"
#include "mcp/exchange.h"
#include "mcp/reqmeta.h"
#include "mcp/rpc.h"
#include "mcp/session.h"
#include "mcp/sessstore.h"
#include "mcp/prompts.h"
#include "mcp/skills.h"
#include "mcp/tasks.h"
#include "mcp/tools.h"

const char *const dispatch_versions[] = {"2025-11-25", "2025-06-18",
					 "2025-03-26", "2024-11-05", NULL};

#define SERVER_INSTRUCTIONS                                                    \
	"Sextant answers questions about services from their telemetry: "      \
	"request rates, latency percentiles, errors, traces and LLM usage, "   \
	"from eBPF and OpenTelemetry sources and Prometheus. Prefer the "      \
	"tools whose description starts with \"Recommended\"; they query "     \
	"every source at once."

bool
dispatch_version_supported(const char *version)
{
	size_t i;

	for (i = 0; dispatch_versions[i] != NULL; i++)
		if (strcmp(dispatch_versions[i], version) == 0)
			return true;
	return false;
}

/* A request being answered inline. */
struct rq {
	struct server *srv;
	struct session *s;
	struct exchange *ex;
	const json_t *id;
	const char *method;
	const json_t *params; /* object, or NULL when absent */
	/* On error the handler sets these and returns NULL. */
	int code;
	char message[512];
	json_t *data;
};

static json_t *rq_fail(struct rq *r, int code, json_t *data, const char *fmt,
		       ...) PRINTF_LIKE(4, 5);

static json_t *
rq_fail(struct rq *r, int code, json_t *data, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->message, sizeof(r->message), fmt, ap);
	va_end(ap);
	r->code = code;
	json_decref(r->data);
	r->data = data;
	return NULL;
}

static bool
at_least(const struct session *s, const char *version)
{
	return strcmp(s->version, version) >= 0;
}

/* A string parameter; NULL (and r failed) when absent or not a string. */
static const char *
param_string(struct rq *r, const char *name, bool required)
{
	const json_t *v = r->params ? json_object_get(r->params, name) : NULL;

	if (v == NULL) {
		if (required)
			rq_fail(r, RPC_INVALID_PARAMS, NULL,
				"missing required parameter \"%s\" (a string)",
				name);
		return NULL;
	}
	if (!json_is_string(v)) {
		rq_fail(r, RPC_INVALID_PARAMS, NULL,
			"parameter \"%s\" must be a string", name);
		return NULL;
	}
	return json_string_value(v);
}

/* Decodes params.cursor ("p<offset>") into *start; false when invalid. */
static bool
page_start(struct rq *r, size_t *start)
{
	const json_t *c =
		r->params ? json_object_get(r->params, "cursor") : NULL;
	const char *s;
	char *end;
	unsigned long long v;

	*start = 0;
	if (c == NULL || json_is_null(c))
		return true;
	s = json_string_value(c);
	if (s == NULL || s[0] != 'p' || s[1] < '0' || s[1] > '9')
		goto bad;
	v = strtoull(s + 1, &end, 10);
	if (*end != '\0' || v > 1000000)
		goto bad;
	*start = (size_t)v;
	return true;
bad:
	rq_fail(r, RPC_INVALID_PARAMS, NULL,
		"invalid cursor: pass back the nextCursor of the previous "
		"page unchanged, or omit it for the first page");
	return false;
}

static size_t
page_size(const struct rq *r)
{
	return (size_t)r->srv->cfg->server.list_page_size;
}

/* Adds nextCursor to result when more items follow. */
static int
page_finish(const struct rq *r, json_t *result, size_t start, size_t total)
{
	char c[32];

	if (start + page_size(r) >= total)
		return 0;
	snprintf(c, sizeof(c), "p%zu", start + page_size(r));
	return json_object_set_new(result, "nextCursor", json_string(c));
}

/* ---- 2026-07-28 ------------------------------------------------------------ */

/* How long a client may keep a list (ms; SEP caching): the lists change
 * only on a reload, which 2025 sessions hear of at once. */
#define MODERN_LIST_TTL_MS 60000

static const char *const stateless_methods[] = {
	"server/discover",
	"tools/list",
	"tools/call",
	"resources/list",
	"resources/templates/list",
	"resources/read",
	"prompts/list",
	"prompts/get",
	"completion/complete",
	"tasks/get",
	"tasks/update",
	"tasks/cancel",
	"subscriptions/listen",
	"skills/list",
	"skills/get",
	NULL,
};

bool
dispatch_stateless_method(const char *method)
{
	for (size_t i = 0; method != NULL && stateless_methods[i] != NULL; i++)
		if (strcmp(stateless_methods[i], method) == 0)
			return true;
	return false;
}

/* The result envelope of a 2026-07-28 request (BI, caching): resultType,
 * and the caching hints of lists, reads and discover.  result: borrowed,
 * changed in place. */
static void
shape_stateless(const struct rq *r, json_t *result)
{
	const char *m = r->method;

	if (!r->s->stateless || result == NULL)
		return;
	if (json_object_get(result, "resultType") == NULL)
		json_object_set_new(result, "resultType",
				    json_string("complete"));
	if (strcmp(m, "resources/read") == 0) {
		/* telemetry changes: read again every time */
		json_object_set_new(result, "ttlMs", json_integer(0));
		json_object_set_new(result, "cacheScope",
				    json_string("private"));
	} else if (strcmp(m, "resources/list") == 0 ||
		   strcmp(m, "resources/templates/list") == 0 ||
		   strcmp(m, "prompts/list") == 0 ||
		   strcmp(m, "server/discover") == 0) {
		json_object_set_new(result, "ttlMs",
				    json_integer(MODERN_LIST_TTL_MS));
		json_object_set_new(result, "cacheScope",
				    json_string("public"));
	}
}

static json_t *server_capabilities(const char *version);

/* server/discover: what this server speaks, without a session.  No
 * listChanged or subscribe: subscriptions/listen is not served yet. */
static json_t *
do_discover(struct rq *r)
{
	json_t *versions = json_array(), *caps;

	for (size_t i = 0; versions != NULL && reqmeta_versions[i] != NULL; i++)
		json_array_append_new(versions,
				      json_string(reqmeta_versions[i]));
	/* listChanged and subscribe: delivered on subscriptions/listen */
	/* skills: {} = no directoryRead (optional, SEP-2640) */
	caps = json_pack(
		"{s:{s:b}, s:{s:b}, s:{}, s:{}, s:{}, s:{s:{}, s:{}, s:o}}",
		"tools", "listChanged", 1, "resources", "subscribe", 1,
		"prompts", "completions", "logging", "extensions",
		TASKS_EXTENSION, SKILLS_EXTENSION, APPS_EXTENSION,
		apps_capability());
	(void)r;
	return json_pack("{s:o, s:o, s:s, s:{s:{s:s, s:s}}}",
			 "supportedVersions", versions, "capabilities", caps,
			 "instructions", SERVER_INSTRUCTIONS, "_meta",
			 REQMETA_KEY_SERVER_INFO, "name", "sextant", "version",
			 SEXTANT_VERSION);
}

/* ---- subscriptions/listen (2026-07-28) ------------------------------------ */

static bool resource_exists(const struct rq *r, const char *uri);

/*
 * Opens the listen stream of this request: the acknowledgment first, with
 * the subset of the filter honored (tools list changes, and updates of
 * resources that exist; prompts and the resource list never change here,
 * so they are not promised), then notifications as they happen, until the
 * client hangs up or the server stops.  No final response.
 */
static int
do_listen(struct rq *r)
{
	const json_t *want = json_object_get(r->params, "notifications");
	const json_t *subs = json_object_get(want, "resourceSubscriptions");
	json_t *filter = json_object(), *kept = json_array(), *ack;
	size_t i;

	if (filter == NULL || kept == NULL) {
		json_decref(filter);
		json_decref(kept);
		rq_fail(r, RPC_INTERNAL_ERROR, NULL, "out of memory");
		return STATUS_NOMEM;
	}
	if (!json_is_object(want) || (subs != NULL && !json_is_array(subs))) {
		json_decref(filter);
		json_decref(kept);
		rq_fail(r, RPC_INVALID_PARAMS, NULL,
			"notifications must be an object: toolsListChanged, "
			"promptsListChanged, resourcesListChanged (booleans), "
			"resourceSubscriptions (an array of URIs)");
		return STATUS_INVALID;
	}
	if (json_is_true(json_object_get(want, "toolsListChanged")))
		json_object_set_new(filter, "toolsListChanged", json_true());
	for (i = 0; i < json_array_size(subs) && json_array_size(kept) < 100;
	     i++) {
		const char *uri = json_string_value(json_array_get(subs, i));

		if (uri != NULL && resource_exists(r, uri))
			json_array_append_new(kept, json_string(uri));
	}
	if (json_array_size(kept) > 0)
		json_object_set(filter, "resourceSubscriptions", kept);
	json_decref(kept);
	ack = rpc_notification("notifications/subscriptions/acknowledged",
			       json_pack("{s:O, s:{s:O}}", "notifications",
					 filter, "_meta",
					 REQMETA_KEY_SUBSCRIPTION, r->id));
	pthread_mutex_lock(&r->s->mu);
	json_decref(r->s->listen);
	r->s->listen = json_pack("{s:o, s:O}", "filter", filter, "id", r->id);
	pthread_mutex_unlock(&r->s->mu);
	/* not final: the stream stays open for what follows */
	exchange_send(r->ex, ack, false);
	return STATUS_OK;
}

/* ---- tasks (2026-07-28 extension) ---------------------------------------- */

/* The task id of a tasks/get, update or cancel request, once the request has declared the
 * extension; NULL with the error set. */
static const char *
task_param(struct rq *r)
{
	if (!reqmeta_has_capability(r->s->client_caps,
				    "extensions/" TASKS_EXTENSION)) {
		rq_fail(r, RPC_MISSING_CAPABILITY,
			json_pack("{s:{s:{s:{}}}}", "requiredCapabilities",
				  "extensions", TASKS_EXTENSION),
			"%s needs the tasks extension: declare \"%s\" in "
			"clientCapabilities.extensions",
			r->method, TASKS_EXTENSION);
		return NULL;
	}
	return param_string(r, "taskId", true);
}

static json_t *
unknown_task(struct rq *r, const char *id)
{
	return rq_fail(r, RPC_INVALID_PARAMS, NULL,
		       "unknown taskId \"%.64s\": it never existed here or "
		       "expired (tasks are kept %d minutes)",
		       id, TASK_TTL_MS / 60000);
}

static json_t *
do_tasks_get(struct rq *r)
{
	const char *id = task_param(r);
	json_t *result = NULL;
	int rc;

	if (id == NULL)
		return NULL;
	rc = tasks_get(r->srv->tasks, id, r->s->owner, &result);
	if (rc == STATUS_NOTFOUND)
		return unknown_task(r, id);
	if (rc != STATUS_OK)
		return rq_fail(r, RPC_INTERNAL_ERROR, NULL, "out of memory");
	return result;
}

static json_t *
do_tasks_update(struct rq *r)
{
	const char *id = task_param(r);
	const json_t *answers = json_object_get(r->params, "inputResponses");

	if (id == NULL)
		return NULL;
	if (answers != NULL && !json_is_object(answers))
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "inputResponses must be an object of answers "
			       "keyed as the task's inputRequests");
	if (tasks_update(r->srv->tasks, id, r->s->owner, answers) != STATUS_OK)
		return unknown_task(r, id);
	return json_object(); /* the ack: resultType only */
}

static json_t *
do_tasks_cancel(struct rq *r)
{
	const char *id = task_param(r);

	if (id == NULL)
		return NULL;
	if (tasks_cancel(r->srv->tasks, id, r->s->owner) != STATUS_OK)
		return unknown_task(r, id);
	return json_object();
}

/* ---- skills (SEP-2640 extension, 2026-07-28) ------------------------------ */

/*
 * The extension is written against revision 2026-07-28 and declared only
 * in server/discover, so 2025 sessions do not have these methods.  The
 * skills are compiled in: they change only with the binary, hence the
 * list's cache hints on both results.
 */
static const char *resource_uri(struct rq *r);

static json_t *
skills_result(struct rq *r, const char *key, int rc, json_t *value)
{
	if (rc != STATUS_OK)
		return rq_fail(r, RPC_INTERNAL_ERROR, NULL,
			       "the skills of this server are unavailable "
			       "(%s): see the server log",
			       status_str(rc));
	return json_pack("{s:o, s:I, s:s}", key, value, "ttlMs",
			 (json_int_t)MODERN_LIST_TTL_MS, "cacheScope",
			 "public");
}

static json_t *
skills_not_here(struct rq *r)
{
	return rq_fail(r, RPC_METHOD_NOT_FOUND, NULL,
		       "%s belongs to the skills extension of revision "
		       "2026-07-28: send it as a 2026-07-28 request",
		       r->method);
}

static json_t *
do_skills_list(struct rq *r)
{
	const json_t *c = json_object_get(r->params, "cursor");
	json_t *skills = NULL;
	int rc;

	if (!r->s->stateless)
		return skills_not_here(r);
	/* one page: no cursor of ours exists */
	if (c != NULL && !json_is_null(c))
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "invalid cursor: skills/list answers in one "
			       "page, omit the cursor");
	rc = skills_list(&skills);
	return skills_result(r, "skills", rc, skills);
}

static json_t *
do_skills_get(struct rq *r)
{
	const char *uri;
	json_t *skill = NULL;
	int rc;

	if (!r->s->stateless)
		return skills_not_here(r);
	if ((uri = resource_uri(r)) == NULL)
		return NULL;
	rc = skills_get(uri, &skill);
	if (rc == STATUS_NOTFOUND)
		return rq_fail(r, RPC_INVALID_PARAMS,
			       json_pack("{s:s}", "uri", uri),
			       "unknown skill uri %s: skills/list shows the "
			       "skills this server serves",
			       uri);
	return skills_result(r, "skill", rc, skill);
}

/*
 * A shared session's change goes to the store first, which answers on
 * the exchange when it is saved (rc: sessstore_change's).  The marker
 * tells dispatch_message that the answer will come.
 */
static json_t deferred_marker;

static json_t *
deferred(struct rq *r, int rc)
{
	if (rc != STATUS_OK)
		return rq_fail(r, RPC_INTERNAL_ERROR, NULL,
			       "the session store is busy: retry in a second");
	return &deferred_marker;
}

static json_t *
do_ping(struct rq *r)
{
	(void)r;
	return json_object();
}

static json_t *
do_set_level(struct rq *r)
{
	const char *name = param_string(r, "level", true);
	int level;

	if (name == NULL)
		return NULL;
	level = mcp_level_parse(name);
	if (level < 0)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "unknown log level \"%s\": use debug, info, "
			       "notice, warning, error, critical, alert or "
			       "emergency",
			       name);
	if (r->s->shared)
		return deferred(r, sessstore_change(r->srv->store, r->s, r->ex,
						    r->id, NULL, false, level));
	pthread_mutex_lock(&r->s->mu);
	r->s->log_level = level;
	pthread_mutex_unlock(&r->s->mu);
	return json_object();
}

static int
set_opt_string(json_t *o, const char *key, const char *value)
{
	if (value == NULL)
		return 0;
	return json_object_set_new(o, key, json_string(value));
}

/*
 * One page of a list method: {key: [item(r, i) for the page], nextCursor
 * when more follow}.  item returns a new object, NULL on ENOMEM.
 */
static json_t *
list_page(struct rq *r, const char *key, size_t n,
	  json_t *(*item)(const struct rq *r, size_t i))
{
	json_t *res, *arr;
	size_t start, i;

	if (!page_start(r, &start))
		return NULL;
	if (start > n)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "invalid cursor: past the end of the list");
	res = json_object();
	arr = json_array();
	if (res == NULL || arr == NULL || json_object_set(res, key, arr))
		goto nomem;
	for (i = start; i < n && i < start + page_size(r); i++)
		if (json_array_append_new(arr, item(r, i)) != 0)
			goto nomem;
	if (page_finish(r, res, start, n))
		goto nomem;
	json_decref(arr);
	return res;
nomem:
	json_decref(arr);
	json_decref(res);
	return rq_fail(r, RPC_INTERNAL_ERROR, NULL, "out of memory");
}

/* Adds the optional fields every listed entry may carry (NULL on ENOMEM,
 * o freed). */
static json_t *
with_details(const struct rq *r, json_t *o, const char *title,
	     const char *description, const char *mime_type)
{
	if (o == NULL ||
	    (at_least(r->s, "2025-06-18") &&
	     set_opt_string(o, "title", title)) ||
	    set_opt_string(o, "description", description) ||
	    set_opt_string(o, "mimeType", mime_type)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
resource_item(const struct rq *r, size_t i)
{
	const struct resource_def *d = catalog_resource_at(r->srv->catalog, i);
	json_t *o = with_details(
		r, json_pack("{s:s, s:s}", "uri", d->uri, "name", d->name),
		d->title, d->description, d->mime_type);

	/* _meta: 2025-06-18 on (the MCP Apps' CSP, for one) */
	if (o != NULL && d->meta != NULL && at_least(r->s, "2025-06-18") &&
	    json_object_set_new(o, "_meta", json_loads(d->meta, 0, NULL)) !=
		    0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
template_item(const struct rq *r, size_t i)
{
	const struct resource_template_def *d =
		catalog_template_at(r->srv->catalog, i);

	return with_details(r,
			    json_pack("{s:s, s:s}", "uriTemplate",
				      d->uri_template, "name", d->name),
			    d->title, d->description, d->mime_type);
}

static json_t *
do_resources_list(struct rq *r)
{
	return list_page(r, "resources",
			 catalog_resource_count(r->srv->catalog),
			 resource_item);
}

static json_t *
do_templates_list(struct rq *r)
{
	return list_page(r, "resourceTemplates",
			 catalog_template_count(r->srv->catalog),
			 template_item);
}

/* Resource URIs: bounded and printable, checked before any lookup. */
static const char *
resource_uri(struct rq *r)
{
	const char *uri = param_string(r, "uri", true);
	size_t i;

	if (uri == NULL)
		return NULL;
	for (i = 0; uri[i] != '\0'; i++)
		if ((unsigned char)uri[i] <= 0x20 || i >= 2048)
			break;
	if (uri[i] != '\0' || i == 0) {
		rq_fail(r, RPC_INVALID_PARAMS, NULL,
			"\"uri\" must be 1-2048 printable characters without "
			"spaces");
		return NULL;
	}
	return uri;
}

static json_t *
do_resources_read(struct rq *r)
{
	const char *uri = resource_uri(r);
	json_t *contents = NULL;
	int rc;

	if (uri == NULL)
		return NULL;
	rc = catalog_read(r->srv->catalog, uri, &contents);
	if (rc == STATUS_NOTFOUND)
		return rq_fail(r,
			       r->s->stateless ? RPC_INVALID_PARAMS
					       : RPC_RESOURCE_NOT_FOUND,
			       json_pack("{s:s}", "uri", uri),
			       "resource not found: %s (resources/list and "
			       "resources/templates/list show what exists)",
			       uri);
	if (rc != STATUS_OK)
		return rq_fail(r, RPC_INTERNAL_ERROR, NULL,
			       "could not read resource %s", uri);
	return json_pack("{s:o}", "contents", contents);
}

static bool
resource_exists(const struct rq *r, const char *uri)
{
	json_t *contents = NULL;
	int rc = catalog_read(r->srv->catalog, uri, &contents);

	json_decref(contents);
	return rc == STATUS_OK;
}

static json_t *
do_subscribe(struct rq *r, bool on)
{
	const char *uri = resource_uri(r);
	int rc;

	if (uri == NULL)
		return NULL;
	/* MCP lets a server choose what it sends updates for: a template's
	 * resource is a query answered afresh on each read */
	if (on && prompts_template_uri(uri))
		return rq_fail(r, RPC_INVALID_PARAMS,
			       json_pack("{s:s}", "uri", uri),
			       "%s cannot be subscribed: a resource template's "
			       "figures are computed on each resources/read "
			       "(read it again for fresh ones); subscribe to "
			       "a listed resource (resources/list), e.g. "
			       "sextant://server/status",
			       uri);
	if (on && !resource_exists(r, uri))
		return rq_fail(r, RPC_RESOURCE_NOT_FOUND,
			       json_pack("{s:s}", "uri", uri),
			       "resource not found: %s", uri);
	if (r->s->shared)
		return deferred(r, sessstore_change(r->srv->store, r->s, r->ex,
						    r->id, uri, on, 0));
	pthread_mutex_lock(&r->s->mu);
	if (on && json_object_size(r->s->subscriptions) >= 1000)
		rc = -1;
	else if (on)
		rc = json_object_set_new(r->s->subscriptions, uri, json_true());
	else
		rc = (json_object_del(r->s->subscriptions, uri), 0);
	pthread_mutex_unlock(&r->s->mu);
	if (rc != 0)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "too many subscriptions on this session (at "
			       "most 1000): unsubscribe first");
	return json_object();
}

static json_t *
do_subscribe_on(struct rq *r)
{
	return do_subscribe(r, true);
}

static json_t *
do_subscribe_off(struct rq *r)
{
	return do_subscribe(r, false);
}

static json_t *
prompt_args_json(const struct prompt_def *d)
{
	json_t *arr = json_array();
	const struct prompt_arg_def *a;

	if (arr == NULL || d->args == NULL)
		return arr;
	for (a = d->args; a->name != NULL; a++) {
		json_t *o = json_pack("{s:s, s:b}", "name", a->name, "required",
				      a->required != 0);

		if (o == NULL || json_array_append_new(arr, o) ||
		    set_opt_string(o, "description", a->description)) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *
prompt_item(const struct rq *r, size_t i)
{
	const struct prompt_def *d = catalog_prompt_at(r->srv->catalog, i);
	json_t *o = with_details(r, json_pack("{s:s}", "name", d->name),
				 d->title, d->description, NULL);

	if (o != NULL && d->args != NULL &&
	    json_object_set_new(o, "arguments", prompt_args_json(d)) != 0) {
		json_decref(o);
		return NULL;
	}
	return o;
}

static json_t *
do_prompts_list(struct rq *r)
{
	return list_page(r, "prompts", catalog_prompt_count(r->srv->catalog),
			 prompt_item);
}

/* A prompt that asks the client for input: input_required results, so
 * 2026-07-28 requests only (2025 sessions answer prompts inline, where
 * no server request can wait). */
static json_t *
prompt_with_input(struct rq *r, const struct prompt_def *d, const json_t *args)
{
	const json_t *in = json_object_get(r->params, "inputResponses");
	json_t *result = NULL;
	char err[256] = "";
	int rc;

	if (!r->s->stateless)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "prompt \"%s\" asks for the user's input, which "
			       "only revision 2026-07-28 requests can give",
			       d->name);
	if (!json_is_object(json_object_get(r->s->client_caps, "elicitation")))
		return rq_fail(r, RPC_MISSING_CAPABILITY,
			       json_pack("{s:{s:{}}}", "requiredCapabilities",
					 "elicitation"),
			       "prompt \"%s\" needs the client's elicitation "
			       "capability",
			       d->name);
	rc = d->get_input(json_is_object(args) ? args : NULL,
			  json_is_object(in) ? in : NULL, &result, err,
			  sizeof(err));
	if (rc == STATUS_AGAIN)
		return json_pack("{s:s, s:o}", "resultType", "input_required",
				 "inputRequests", result);
	if (rc == STATUS_INVALID)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL, "%s", err);
	if (rc != STATUS_OK)
		return rq_fail(r, RPC_INTERNAL_ERROR, NULL,
			       "could not build prompt \"%s\"", d->name);
	return result;
}

static json_t *
do_prompts_get(struct rq *r)
{
	const char *name = param_string(r, "name", true);
	const struct prompt_def *d;
	const struct prompt_arg_def *a;
	const json_t *args, *v;
	const char *key;
	json_t *result = NULL;
	char err[256] = "";
	int rc;

	if (name == NULL)
		return NULL;
	d = catalog_prompt_find(r->srv->catalog, name);
	if (d == NULL)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "unknown prompt \"%s\" (prompts/list shows the "
			       "prompts)",
			       name);
	args = json_object_get(r->params, "arguments");
	if (args != NULL && !json_is_object(args) && !json_is_null(args))
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "\"arguments\" must be an object of strings");
	if (json_is_object(args)) {
		json_object_foreach((json_t *)args, key, v)
		{
			if (!json_is_string(v))
				return rq_fail(r, RPC_INVALID_PARAMS, NULL,
					       "argument \"%s\" must be a "
					       "string",
					       key);
		}
	}
	for (a = d->args; a != NULL && a->name != NULL; a++)
		if (a->required &&
		    !json_is_string(json_object_get(args, a->name)))
			return rq_fail(r, RPC_INVALID_PARAMS, NULL,
				       "prompt \"%s\" needs the argument "
				       "\"%s\"",
				       name, a->name);
	if (d->get_input != NULL)
		return prompt_with_input(r, d, args);
	rc = d->get(json_is_object(args) ? args : NULL, &result, err,
		    sizeof(err));
	if (rc == STATUS_INVALID)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL, "%s", err);
	if (rc != STATUS_OK)
		return rq_fail(r, RPC_INTERNAL_ERROR, NULL,
			       "could not build prompt \"%s\"", name);
	return result;
}

static json_t *
do_complete(struct rq *r)
{
	const json_t *ref = json_object_get(r->params, "ref");
	const json_t *arg = json_object_get(r->params, "argument");
	const char *type = json_string_value(json_object_get(ref, "type"));
	const char *aname = json_string_value(json_object_get(arg, "name"));
	const char *avalue = json_string_value(json_object_get(arg, "value"));
	json_t *values = NULL;
	size_t total = 0;

	if (type == NULL || aname == NULL || avalue == NULL)
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "completion/complete needs ref {type, name|uri} "
			       "and argument {name, value} (strings)");
	if (strcmp(type, "ref/prompt") == 0) {
		const char *name =
			json_string_value(json_object_get(ref, "name"));
		const struct prompt_def *d =
			name != NULL
				? catalog_prompt_find(r->srv->catalog, name)
				: NULL;

		if (d == NULL)
			return rq_fail(r, RPC_INVALID_PARAMS, NULL,
				       "unknown prompt \"%s\"",
				       name != NULL ? name : "");
		if (d->complete != NULL &&
		    d->complete(aname, avalue, &values) != STATUS_OK)
			values = NULL;
		else if (d->complete == NULL &&
			 prompts_complete(r->srv, aname, avalue, &values,
					  &total) != STATUS_OK)
			values = NULL;
	} else if (strcmp(type, "ref/resource") == 0) {
		if (prompts_complete(r->srv, aname, avalue, &values, &total) !=
		    STATUS_OK)
			values = NULL;
	} else {
		return rq_fail(r, RPC_INVALID_PARAMS, NULL,
			       "ref.type must be \"ref/prompt\" or "
			       "\"ref/resource\"");
	}
	if (values == NULL)
		values = json_array();
	while (json_array_size(values) > 100)
		json_array_remove(values, json_array_size(values) - 1);
	if (total < json_array_size(values))
		total = json_array_size(values);
	/* "o" steals values, on failure too. */
	return json_pack("{s:{s:o, s:I, s:b}}", "completion", "values", values,
			 "total", (json_int_t)total, "hasMore",
			 total > json_array_size(values));
}

/* tools/list answers with the pre-serialized page: no JSON encoding of
 * the definitions on the hot path. */
static int
do_tools_list(struct rq *r)
{
	struct tools *t;
	const char *page;
	size_t start, len, outlen;
	char *text;

	if (!page_start(r, &start))
		return STATUS_INVALID;
	server_live_rdlock(r->srv);
	t = r->srv->tools;
	page = tools_list_json_for(
		t, r->s->stateless ? REQMETA_VERSION : r->s->version,
		reqmeta_has_capability(r->s->client_caps,
				       "extensions/" APPS_EXTENSION),
		r->ex->read_only, start, &len);
	text = page != NULL ? rpc_result_text(r->id, page, len, &outlen) : NULL;
	server_live_unlock(r->srv);
	if (page == NULL) {
		rq_fail(r, RPC_INVALID_PARAMS, NULL,
			"invalid cursor: pass back the nextCursor of the "
			"previous page unchanged");
		return STATUS_INVALID;
	}
	if (text == NULL) {
		rq_fail(r, RPC_INTERNAL_ERROR, NULL, "out of memory");
		return STATUS_NOMEM;
	}
	r->ex->ops->send_text(r->ex, text, outlen);
	return STATUS_OK;
}

/*
 * The input_required round of a 2026-07-28 tools/call (SEP-2322): the
 * client's inputResponses (an object, or absent) and the requestState it
 * echoes, verified: it must have been sealed by this server for this tool
 * and not have expired.  False with the error set.
 */
static bool
round_params(struct rq *r, const char *tool, const json_t **responses,
	     json_t **state)
{
	const json_t *in = json_object_get(r->params, "inputResponses");
	const json_t *st = json_object_get(r->params, "requestState");
	char scope[200];
	struct timespec ts;
	int rc;

	*responses = NULL;
	*state = NULL;
	if (in != NULL && !json_is_null(in) && !json_is_object(in)) {
		rq_fail(r, RPC_INVALID_PARAMS, NULL,
			"inputResponses must be an object of the answers, "
			"keyed as the inputRequests that asked for them");
		return false;
	}
	*responses = json_is_object(in) ? in : NULL;
	if (st == NULL || json_is_null(st))
		return true;
	clock_gettime(CLOCK_REALTIME, &ts);
	call_state_scope(tool, scope, sizeof(scope));
	rc = json_is_string(st)
		     ? seal_open(r->srv->seal, scope, json_string_value(st),
				 (int64_t)ts.tv_sec * 1000 +
					 ts.tv_nsec / 1000000,
				 state)
		     : STATUS_INVALID;
	if (rc == STATUS_OK)
		return true;
	rq_fail(r, RPC_INVALID_PARAMS, NULL,
		"requestState %s: send the requestState of this tool's last "
		"input_required result unchanged, or call again without it",
		rc == STATUS_TIMEOUT ? "has expired"
				     : "was not issued by this server for this "
				       "tool, or was changed");
	return false;
}

/* The tool registry in force now, referenced (tools_unref). */
static struct tools *
live_tools(struct rq *r)
{
	struct tools *t;

	server_live_rdlock(r->srv);
	t = r->srv->tools;
	tools_ref(t);
	server_live_unlock(r->srv);
	return t;
}

/* After call_start or call_start_read: answered, or the error (but
 * STATUS_FULL, which the transport answers with 503). */
static void
call_started(struct rq *r, int rc, bool *answered)
{
	if (rc == STATUS_OK)
		*answered = true;
	else if (rc != STATUS_FULL)
		rq_fail(r, RPC_INTERNAL_ERROR, NULL,
			"the server is shutting down: retry on another "
			"instance");
}

/* resources/read of a template a tool serves (prompts_read_tool): the
 * tool's job, answered as a read.  *answered false and STATUS_NOTFOUND
 * when the uri is not one of those (the catalog reads it). */
static int
do_read_call(struct rq *r, bool *answered)
{
	const char *uri = json_string_value(json_object_get(r->params, "uri"));
	const char *name;
	const struct tool_def *tool;
	struct jsonschema_error verr;
	struct tools *t;
	json_t *args = NULL;
	int rc;

	*answered = false;
	if (uri == NULL ||
	    (rc = prompts_read_tool(uri, &name, &args)) == STATUS_NOTFOUND)
		return STATUS_NOTFOUND;
	if (rc != STATUS_OK) {
		rq_fail(r, RPC_INTERNAL_ERROR, NULL, "out of memory");
		return rc;
	}
	t = live_tools(r);
	tool = tools_find(t, name);
	if (tool == NULL ||
	    jsonschema_apply_defaults(tool->input, args) != STATUS_OK ||
	    jsonschema_validate(tool->input, args, &verr) != STATUS_OK) {
		rq_fail(r,
			r->s->stateless ? RPC_INVALID_PARAMS
					: RPC_RESOURCE_NOT_FOUND,
			json_pack("{s:s}", "uri", uri),
			"resource not found: %s (%s)", uri,
			tool == NULL ? "its tool is not offered here"
				     : "not a valid name or id");
		rc = STATUS_INVALID;
		goto out;
	}
	rc = call_start_read(r->srv, r->s, r->ex, r->id, tool, args, uri);
	args = NULL; /* taken */
	call_started(r, rc, answered);
out:
	json_decref(args);
	tools_unref(t);
	return rc;
}

/* tools/call: checks, validation, then a job.  STATUS_FULL: not sent. */
static int
do_tools_call(struct rq *r, bool *answered)
{
	const char *name = param_string(r, "name", true);
	const json_t *args, *meta, *responses = NULL;
	json_t *state = NULL;
	const struct tool_def *tool;
	struct tools *t;
	struct jsonschema_error verr;
	json_t *targs = NULL;
	int rc;

	*answered = false;
	if (name == NULL)
		return STATUS_INVALID;
	args = json_object_get(r->params, "arguments");
	if (args != NULL && !json_is_object(args) && !json_is_null(args)) {
		rq_fail(r, RPC_INVALID_PARAMS, NULL,
			"\"arguments\" must be an object");
		return STATUS_INVALID;
	}
	t = live_tools(r);
	tool = tools_find(t, name);
	if (tool == NULL) {
		rq_fail(r, RPC_INVALID_PARAMS, NULL,
			"unknown tool \"%s\": tools/list shows the tools this "
			"server offers",
			name);
		rc = STATUS_INVALID;
		goto out;
	}
	if (tool->write && r->ex->read_only) {
		const char *scope = r->srv->cfg->oauth.scope_write;

		/* the transport answers HTTP 403 with the step-up challenge
		 * where it still can (transport.c ex_step_up) */
		rq_fail(r, RPC_INSUFFICIENT_SCOPE,
			json_pack("{s:s, s:s}", "scope", scope, "tool", name),
			"insufficient scope: tool \"%s\" needs scope %s, which "
			"this credential lacks; authorize again asking for it",
			name, scope);
		rc = STATUS_INVALID;
		goto out;
	}
	targs = json_is_object(args) ? json_deep_copy(args) : json_object();
	/* STATUS_LIMIT (arguments nested too deep) is left to validation,
	 * which says so to the model. */
	if (targs == NULL ||
	    jsonschema_apply_defaults(tool->input, targs) == STATUS_NOMEM) {
		rq_fail(r, RPC_INTERNAL_ERROR, NULL, "out of memory");
		rc = STATUS_NOMEM;
		goto out;
	}
	if (jsonschema_validate(tool->input, targs, &verr) != STATUS_OK) {
		/* Input errors are tool results the model can act on
		 * (SEP-1303). */
		json_t *res = tool_result_error(
			"invalid arguments for tool %s: %s", name, verr.msg);

		expo_inc(expo_series(
			r->srv->m.tool_calls,
			(const char *[]){name, "invalid", r->ex->client}));
		shape_stateless(r, res);
		exchange_send(r->ex, rpc_result(r->id, res), true);
		*answered = true;
		rc = STATUS_OK;
		goto out;
	}
	meta = json_object_get(r->params, "_meta");
	if (r->s->stateless && !round_params(r, name, &responses, &state)) {
		rc = STATUS_INVALID;
		goto out;
	}
	rc = call_start(r->srv, r->s, r->ex, r->id,
			json_object_get(meta, "progressToken"), tool, targs,
			responses, state);
	targs = NULL; /* call_start took it, and state */
	call_started(r, rc, answered);
out:
	json_decref(targs);
	tools_unref(t);
	return rc;
}

static const struct {
	const char *name;
	json_t *(*fn)(struct rq *r);
} inline_methods[] = {
	{"ping", do_ping},
	{"logging/setLevel", do_set_level},
	{"resources/list", do_resources_list},
	{"resources/templates/list", do_templates_list},
	{"resources/read", do_resources_read},
	{"resources/subscribe", do_subscribe_on},
	{"resources/unsubscribe", do_subscribe_off},
	{"prompts/list", do_prompts_list},
	{"prompts/get", do_prompts_get},
	{"completion/complete", do_complete},
	{"server/discover", do_discover},
	{"tasks/get", do_tasks_get},
	{"tasks/update", do_tasks_update},
	{"tasks/cancel", do_tasks_cancel},
	{"skills/list", do_skills_list},
	{"skills/get", do_skills_get},
};

static const char *const known_methods[] = {"initialize",
					    "ping",
					    "tools/list",
					    "tools/call",
					    "resources/list",
					    "resources/templates/list",
					    "resources/read",
					    "resources/subscribe",
					    "resources/unsubscribe",
					    "prompts/list",
					    "prompts/get",
					    "completion/complete",
					    "logging/setLevel",
					    "notifications/initialized",
					    "notifications/cancelled",
					    "notifications/roots/list_changed",
					    "notifications/progress",
					    "server/discover",
					    "skills/list",
					    "skills/get",
					    NULL};

bool
dispatch_session_method(const char *method)
{
	return !dispatch_stateless_method(method) &&
	       strcmp(dispatch_method_label(method), "other") != 0;
}

const char *
dispatch_method_label(const char *method)
{
	size_t i;

	for (i = 0; method != NULL && known_methods[i] != NULL; i++)
		if (strcmp(known_methods[i], method) == 0)
			return known_methods[i];
	return "other";
}

static void
handle_notification(struct server *srv, struct session *s, const char *method,
		    const json_t *params)
{
	if (strcmp(method, "notifications/initialized") == 0) {
		pthread_mutex_lock(&s->mu);
		s->initialized = true;
		pthread_mutex_unlock(&s->mu);
	} else if (strcmp(method, "notifications/cancelled") == 0) {
		const json_t *id = json_object_get(params, "requestId");

		/* a call on another replica of a shared session: tell them */
		if (id != NULL && !call_cancel_request(s, id) && s->shared)
			sessstore_cancel(srv->store, s, id);
	} else {
		log_debug(&(struct log_fields){.session = s->id,
					       .method = method,
					       .duration_ms = -1},
			  "notification ignored");
	}
}

static void
handle_response(struct session *s, const json_t *msg)
{
	const json_t *id = json_object_get(msg, "id");
	struct pending *p;
	char idbuf[32];

	if (json_is_string(id))
		snprintf(idbuf, sizeof(idbuf), "%s", json_string_value(id));
	else
		rpc_id_text(id, idbuf, sizeof(idbuf));
	pthread_mutex_lock(&s->mu);
	for (p = s->pending; p != NULL; p = p->next)
		if (!p->answered && strcmp(p->id, idbuf) == 0)
			break;
	if (p != NULL) {
		p->result = json_incref(json_object_get(msg, "result"));
		p->error = json_incref(json_object_get(msg, "error"));
		p->answered = true;
		call_wake_locked(p->call);
	}
	pthread_mutex_unlock(&s->mu);
	if (p == NULL && s->shared)
		sessstore_answer(s->store, s, idbuf, msg); /* made elsewhere */
	else if (p == NULL)
		log_debug(&(struct log_fields){.session = s->id,
					       .duration_ms = -1},
			  "response to unknown request %s ignored", idbuf);
}

int
dispatch_message(struct server *srv, struct session *s, struct exchange *ex,
		 const json_t *msg)
{
	struct rq r = {.srv = srv, .s = s, .ex = ex};
	const char *why;
	json_t *result = NULL;
	size_t i;
	int rc = STATUS_OK;

	switch (rpc_classify(msg, &why, &r.id)) {
	case RPC_INVALID:
		exchange_send(ex,
			      rpc_error(r.id, RPC_INVALID_REQUEST, why, NULL),
			      true);
		return STATUS_OK;
	case RPC_RESPONSE: handle_response(s, msg); return STATUS_OK;
	case RPC_NOTIFICATION:
		handle_notification(
			srv, s,
			json_string_value(json_object_get(msg, "method")),
			json_object_get(msg, "params"));
		return STATUS_OK;
	case RPC_REQUEST: break;
	}
	r.method = json_string_value(json_object_get(msg, "method"));
	r.params = json_object_get(msg, "params"); /* an object: classified */
	expo_inc(
		expo_series(srv->m.rpc_requests,
			    (const char *[]){dispatch_method_label(r.method)}));
	if (strcmp(r.method, "tools/call") == 0) {
		bool answered;

		rc = do_tools_call(&r, &answered);
		if (rc == STATUS_FULL || answered)
			return rc == STATUS_FULL ? STATUS_FULL : STATUS_OK;
		goto error;
	}
	if (strcmp(r.method, "resources/read") == 0) {
		bool answered;

		rc = do_read_call(&r, &answered);
		if (rc == STATUS_FULL || answered)
			return rc == STATUS_FULL ? STATUS_FULL : STATUS_OK;
		if (rc != STATUS_NOTFOUND)
			goto error;
		rc = STATUS_OK;
	}
	if (strcmp(r.method, "subscriptions/listen") == 0 && s->stateless) {
		if (do_listen(&r) == STATUS_OK)
			return STATUS_OK;
		goto error;
	}
	if (strcmp(r.method, "tools/list") == 0) {
		if (do_tools_list(&r) == STATUS_OK)
			return STATUS_OK;
		goto error;
	}
	if (strcmp(r.method, "initialize") == 0) {
		rq_fail(&r, RPC_INVALID_REQUEST, NULL,
			"this session is already initialized: send initialize "
			"without an Mcp-Session-Id header to start a new one");
		goto error;
	}
	for (i = 0; i < sizeof(inline_methods) / sizeof(inline_methods[0]);
	     i++) {
		if (strcmp(inline_methods[i].name, r.method) == 0) {
			/* the other era's methods are unknown here */
			if (s->stateless
				    ? !dispatch_stateless_method(r.method)
				    : strcmp(r.method, "server/discover") == 0)
				break;
			result = inline_methods[i].fn(&r);
			if (result == NULL)
				goto error;
			if (result == &deferred_marker)
				return STATUS_OK;
			shape_stateless(&r, result);
			exchange_send(ex, rpc_result(r.id, result), true);
			return STATUS_OK;
		}
	}
	rq_fail(&r, RPC_METHOD_NOT_FOUND, NULL,
		"method \"%s\" is not supported by this server", r.method);
error:
	if (r.code == 0)
		rq_fail(&r, RPC_INTERNAL_ERROR, NULL, "internal error");
	expo_inc(expo_series(
		srv->m.rpc_errors,
		(const char *[]){r.code == RPC_METHOD_NOT_FOUND	    ? "-32601"
				 : r.code == RPC_INVALID_PARAMS	    ? "-32602"
				 : r.code == RPC_INVALID_REQUEST    ? "-32600"
				 : r.code == RPC_RESOURCE_NOT_FOUND ? "-32002"
				 : r.code == RPC_MISSING_CAPABILITY
					 ? "-32021"
					 : "-32603"}));
	exchange_send(ex, rpc_error(r.id, r.code, r.message, r.data), true);
	(void)rc;
	return STATUS_OK;
}

static json_t *
server_capabilities(const char *version)
{
	json_t *caps = json_pack("{s:{s:b}, s:{s:b, s:b}, s:{s:b}, s:{}}",
				 "tools", "listChanged", 1, "resources",
				 "subscribe", 1, "listChanged", 1, "prompts",
				 "listChanged", 1, "logging");

	if (caps != NULL && strcmp(version, "2025-03-26") >= 0)
		json_object_set_new(caps, "completions", json_object());
	/* the MCP Apps extension (SEP-1724's extensions capability) */
	if (caps != NULL && strcmp(version, "2025-06-18") >= 0)
		json_object_set_new(
			caps, "extensions",
			json_pack("{s:o}", APPS_EXTENSION, apps_capability()));
	return caps;
}

int
dispatch_initialize(struct server *srv, const json_t *msg, json_t **response,
		    struct session **out)
{
	const json_t *id = json_object_get(msg, "id");
	const json_t *params = json_object_get(msg, "params");
	const char *asked =
		json_string_value(json_object_get(params, "protocolVersion"));
	const json_t *caps = json_object_get(params, "capabilities");
	const json_t *info = json_object_get(params, "clientInfo");
	const char *version;
	struct session *s = NULL;
	json_t *result, *sinfo;
	char *instructions;
	int rc;

	*response = NULL;
	*out = NULL;
	if (asked == NULL || (caps != NULL && !json_is_object(caps))) {
		*response = rpc_error(
			id, RPC_INVALID_PARAMS,
			"initialize needs params.protocolVersion (a string), "
			"params.capabilities (an object) and params.clientInfo",
			NULL);
		return STATUS_INVALID;
	}
	/* Negotiation: the client's revision when we speak it, else our
	 * newest, which the client may refuse. */
	version = dispatch_version_supported(asked) ? asked
						    : dispatch_versions[0];
	rc = session_create(srv->sessions, version, caps,
			    json_is_object(info) ? info : NULL, &s);
	if (rc != STATUS_OK) {
		*response = rpc_error(
			id, RPC_SERVER_BUSY,
			rc == STATUS_FULL
				? "too many sessions: retry later, or end "
				  "unused sessions with DELETE"
				: "could not create a session",
			NULL);
		return rc == STATUS_FULL ? STATUS_FULL : STATUS_IO;
	}
	sinfo = json_pack("{s:s, s:s}", "name", "sextant", "version",
			  SEXTANT_VERSION);
	if (sinfo != NULL && strcmp(version, "2025-06-18") >= 0)
		json_object_set_new(sinfo, "title", json_string("Sextant"));
	if (sinfo != NULL && strcmp(version, "2025-11-25") >= 0)
		json_object_set_new(
			sinfo, "description",
			json_string("MCP gateway for observability: metrics, "
				    "traces and LLM usage from eBPF, "
				    "OpenTelemetry and Prometheus"));
	instructions = prompts_instructions(srv, SERVER_INSTRUCTIONS);
	result = json_pack("{s:s, s:o, s:o, s:s}", "protocolVersion", version,
			   "capabilities", server_capabilities(version),
			   "serverInfo", sinfo, "instructions",
			   instructions != NULL ? instructions
						: SERVER_INSTRUCTIONS);
	free(instructions);
	*response = rpc_result(id, result);
	if (*response == NULL) {
		session_delete(srv->sessions, s->id);
		session_release(s);
		return STATUS_NOMEM;
	}
	log_info(&(struct log_fields){.session = s->id,
				      .method = "initialize",
				      .duration_ms = -1},
		 "session created: revision %s, client %s", version,
		 json_string_value(json_object_get(info, "name"))
			 ? json_string_value(json_object_get(info, "name"))
			 : "(unnamed)");
	*out = s;
	return STATUS_OK;
}

void
dispatch_notify_session(struct session *s, json_t *msg)
{
	int rc = STATUS_CLOSED;

	if (s->shared) { /* its GET stream may be read on any replica */
		sessstore_notify(s->store, s, msg);
		return;
	}

	pthread_mutex_lock(&s->mu);
	if (!s->closed) {
		if (s->standalone == NULL)
			rc = stream_open(s, true,
					 strcmp(s->version, "2025-11-25") >= 0,
					 &s->standalone);
		else
			rc = STATUS_OK;
		if (rc == STATUS_OK)
			rc = stream_send(s->standalone, msg);
	}
	pthread_mutex_unlock(&s->mu);
	if (rc != STATUS_OK && rc != STATUS_CLOSED)
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "notification dropped: %s", status_str(rc));
	json_decref(msg);
}

struct updated_ctx {
	const char *uri;
};

static void
notify_updated(struct session *s, void *arg)
{
	struct updated_ctx *ctx = arg;
	bool subscribed;

	pthread_mutex_lock(&s->mu);
	subscribed = json_object_get(s->subscriptions, ctx->uri) != NULL;
	pthread_mutex_unlock(&s->mu);
	if (subscribed)
		dispatch_notify_session(
			s,
			rpc_notification("notifications/resources/updated",
					 json_pack("{s:s}", "uri", ctx->uri)));
}

void
dispatch_resource_updated(struct server *srv, const char *uri)
{
	struct updated_ctx ctx = {uri};

	session_table_foreach(srv->sessions, notify_updated, &ctx);
	dispatch_listen_notify(srv, "notifications/resources/updated", uri);
}

struct listen_ctx {
	const char *method, *uri;
};

/* One listen stream: the notification if its filter asked for it. */
static void
listen_one(struct session *s, void *arg)
{
	const struct listen_ctx *ctx = arg;
	const json_t *filter, *subs;
	json_t *msg = NULL;
	bool wanted = false;
	size_t i;

	pthread_mutex_lock(&s->mu);
	filter = json_object_get(s->listen, "filter");
	if (filter != NULL && s->streams != NULL && !s->closed) {
		if (strcmp(ctx->method, "notifications/tools/list_changed") ==
		    0)
			wanted = json_is_true(
				json_object_get(filter, "toolsListChanged"));
		subs = json_object_get(filter, "resourceSubscriptions");
		for (i = 0; ctx->uri != NULL && i < json_array_size(subs); i++)
			wanted |= strcmp(json_string_value(
						 json_array_get(subs, i)),
					 ctx->uri) == 0;
	}
	if (wanted) {
		json_t *params = json_pack("{s:{s:O}}", "_meta",
					   REQMETA_KEY_SUBSCRIPTION,
					   json_object_get(s->listen, "id"));

		if (params != NULL && ctx->uri != NULL)
			json_object_set_new(params, "uri",
					    json_string(ctx->uri));
		msg = rpc_notification(ctx->method, params);
		if (msg != NULL && stream_send(s->streams, msg) != STATUS_OK)
			log_warn(&(struct log_fields){.duration_ms = -1},
				 "listen notification dropped: stream full");
	}
	pthread_mutex_unlock(&s->mu);
	json_decref(msg);
}

void
dispatch_listen_notify(struct server *srv, const char *method, const char *uri)
{
	struct listen_ctx ctx = {method, uri};

	session_table_foreach(srv->requests, listen_one, &ctx);
}

static void
notify_tools_changed(struct session *s, void *arg)
{
	(void)arg;
	dispatch_notify_session(
		s, rpc_notification("notifications/tools/list_changed", NULL));
}

void
dispatch_notify_tools_changed(struct server *srv)
{
	session_table_foreach(srv->sessions, notify_tools_changed, NULL);
	dispatch_listen_notify(srv, "notifications/tools/list_changed", NULL);
}
