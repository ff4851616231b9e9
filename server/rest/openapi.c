/*
 * openapi.c - the REST facade's OpenAPI 3.1 document (openapi.h): paths
 * from the tool registry and rest_routes[], schemas from the tool
 * definitions, errors as RFC 9457 problem details.
 *
 * Each tool's inputSchema and outputSchema become components.schemas
 * "<tool>.input" and "<tool>.output"; their "$defs" move beside them under
 * their own names when every tool that shares a name shares its schema
 * (defs.json's span, trace, metric...), else as "<tool>.<part>.<name>".
 * OpenAPI 3.1 takes JSON Schema 2020-12 as is (OAS 3.1.0 section 4.8.24),
 * so nothing else of a schema is rewritten.
 */
#include "rest/openapi.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "conf/config.h"
#include "json/jsonschema.h"
#include "mcp/tools.h"
#include "rest/routes.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "dev"
#endif

#define REF_SCHEMAS    "#/components/schemas/"
#define REF_RESPONSES  "#/components/responses/"
#define REF_HEADERS    "#/components/headers/"
#define REF_PARAMETERS "#/components/parameters/"

/* A component name or a "$ref": tool names are at most 64 characters
 * (MCP), definition names are checked against this. */
#define OPENAPI_NAME_MAX 256

struct doc {
	json_t *schemas; /* components.schemas, borrowed from the document */
	int rc; /* why a builder returned NULL: STATUS_NOMEM unless set */
	char *err;
	size_t errlen;
};

/* What each tool set is for: the tags' descriptions. */
static const struct {
	const char *set;
	const char *description;
} set_tags[] = {
	{"core", "The gateway itself: version, store, sources"},
	{"query", "Per-call metrics and traces from every span source"},
	{"spans", "Services, traces and spans from the telemetry store"},
	{"genai", "GenAI sessions, token usage and cost"},
	{"grafana", "Prometheus metrics through Grafana"},
	{"mesh", "The service graph, citations, action UIs and Istio config"},
	{"conformance", "The MCP conformance suite's fixture tools"},
	{"catalog", "The enabled tools and their schemas"},
	{"kiali", "Kiali's route for its AI tools, so a Kiali-style UI can "
		  "call Sextant unchanged"},
};

/* The RFC 9457 problem answers every operation may give. */
static const struct {
	const char *status;
	const char *name; /* components.responses key */
	const char *description;
	const char *header; /* a header beside X-Request-Id, or NULL */
} problems[] = {
	{"400", "BadRequest",
	 "Malformed JSON, a bad argument (errors names each field) or an "
	 "unknown query parameter",
	 NULL},
	{"401", "Unauthorized", "Missing or wrong API key", "WWW-Authenticate"},
	{"403", "Forbidden", "Origin or Host not allowed", NULL},
	{"404", "NotFound",
	 "Unknown tool, route or object (a trace or session the store does "
	 "not hold)",
	 NULL},
	{"405", "MethodNotAllowed",
	 "Method not allowed; Allow lists those that are", "Allow"},
	{"406", "NotAcceptable",
	 "Accept admits neither application/json nor "
	 "application/problem+json",
	 NULL},
	{"413", "ContentTooLarge", "Body over the size limit", NULL},
	{"415", "UnsupportedMediaType", "Body not application/json", NULL},
	{"422", "ToolError",
	 "The tool answered with an error (isError): detail carries its "
	 "message",
	 NULL},
	{"429", "TooManyRequests", "Too many requests: retry after Retry-After",
	 "Retry-After"},
	{"503", "ServiceUnavailable",
	 "The worker queue is full or the gateway is draining: retry after "
	 "Retry-After",
	 "Retry-After"},
	{"500", "InternalError", "An error of the gateway's own", NULL},
	{"504", "GatewayTimeout",
	 "The call ran past workers.call_timeout_s and was cancelled", NULL},
};

static const struct {
	const char *name;
	const char *type;
	const char *description;
} headers[] = {
	{"X-Request-Id", "string",
	 "The request's id, also on the gateway's log lines"},
	{"ETag", "string",
	 "Strong validator of the body: send it back in If-None-Match"},
	{"Cache-Control", "string",
	 "From the tool's ttl; no-store for live (relative) time ranges"},
	{"Retry-After", "integer", "Seconds to wait before retrying"},
	{"WWW-Authenticate", "string", "The Bearer challenge"},
	{"Allow", "string", "The methods the path allows"},
};

/* Example values for arguments no schema keyword gives one for, taken from
 * the demo day (lib/demo: sextant demo-data), the W3C trace context
 * example trace id and the tools' own descriptions. */
static const struct {
	const char *arg;
	const char *value;
} example_args[] = {
	{"service", "checkout"},
	{"service_name", "checkout"},
	{"namespace", "shop"},
	{"trace_id", "4bf92f3577b34da6a3ce929d0e0e4736"},
	{"session_id", "sess_4bf92f3577b34da6"},
	{"session_id_1", "sess_4bf92f3577b34da6"},
	{"session_id_2", "sess_a3ce929d0e0e4736"},
	{"metric_name", "http_request_duration_seconds"},
	{"keywords", "mtls, strict"},
	{"kind", "VirtualService"},
	{"name", "http.server.request.duration"},
	{"time_range", "1h"},
};

static json_t *
ref(const char *base, const char *name)
{
	char buf[OPENAPI_NAME_MAX + 64];

	snprintf(buf, sizeof(buf), "%s%s", base, name);
	return json_pack("{s:s}", "$ref", buf);
}

/* A component name: OAS 3.1.0 4.8.7.1, ^[a-zA-Z0-9\.\-_]+$. */
static bool
component_name_ok(const char *s)
{
	size_t n =
		strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "0123456789._-");

	return n > 0 && s[n] == '\0' && n < OPENAPI_NAME_MAX / 2;
}

static void *
fail(struct doc *d, const char *tool, const char *what)
{
	d->rc = STATUS_INVALID;
	snprintf(d->err, d->errlen, "tool %s: %s", tool, what);
	return NULL;
}

/* ---- schemas -------------------------------------------------------- */

/* Where a schema keeps definitions a "$ref" names: "#/$defs/<n>". */
static const char *const def_homes[] = {"$defs", "definitions"};

/* Keywords whose values are data, not schemas. */
static bool
is_data_keyword(const char *k)
{
	return strcmp(k, "const") == 0 || strcmp(k, "enum") == 0 ||
	       strcmp(k, "default") == 0 || strcmp(k, "examples") == 0;
}

/* Keywords whose values map names to schemas. */
static bool
is_schema_map(const char *k)
{
	return strcmp(k, "properties") == 0 ||
	       strcmp(k, "patternProperties") == 0 ||
	       strcmp(k, "dependentSchemas") == 0 || strcmp(k, "$defs") == 0 ||
	       strcmp(k, "definitions") == 0;
}

/* "#/$defs/<n>/rest" -> "#/components/schemas/<prefix><n>/rest". */
static bool
rewrite_ref(struct doc *d, const char *tool, json_t *r, const char *prefix)
{
	const char *s = json_string_value(r);
	char name[OPENAPI_NAME_MAX], buf[2 * OPENAPI_NAME_MAX];

	if (s[0] != '#')
		return true; /* not local: the tool's own schema refused it */
	for (size_t i = 0; i < sizeof(def_homes) / sizeof(def_homes[0]); i++) {
		size_t hl = strlen(def_homes[i]), n;

		if (strncmp(s, "#/", 2) != 0 ||
		    strncmp(s + 2, def_homes[i], hl) != 0 || s[2 + hl] != '/')
			continue;
		s += 3 + hl;
		n = strcspn(s, "/");
		if (n >= sizeof(name))
			break;
		memcpy(name, s, n);
		name[n] = '\0';
		if (!component_name_ok(name))
			break;
		snprintf(buf, sizeof(buf), "%s%s%s", REF_SCHEMAS, prefix, s);
		return json_string_set(r, buf) == 0 ||
		       (d->rc = STATUS_NOMEM, false);
	}
	snprintf(buf, sizeof(buf),
		 "$ref \"%.200s\" cannot move into the OpenAPI document: "
		 "use \"#/$defs/<name>\" with a name of letters, digits, "
		 "'.', '-' or '_'",
		 json_string_value(r));
	fail(d, tool, buf);
	return false;
}

/* Rewrites the local "$ref"s of schema s and of the schemas inside it. */
static bool
rewrite_schema(struct doc *d, const char *tool, json_t *s, const char *prefix)
{
	const char *k;
	json_t *v;

	json_object_foreach(s, k, v)
	{
		if (strcmp(k, "$ref") == 0 && json_is_string(v)) {
			if (!rewrite_ref(d, tool, v, prefix))
				return false;
		} else if (is_data_keyword(k)) {
			continue;
		} else if (is_schema_map(k)) {
			const char *name;
			json_t *sub;

			json_object_foreach(v, name, sub)
			{
				if (!rewrite_schema(d, tool, sub, prefix))
					return false;
			}
		} else if (json_is_object(v)) {
			if (!rewrite_schema(d, tool, v, prefix))
				return false;
		} else if (json_is_array(v)) {
			size_t i;
			json_t *sub;

			json_array_foreach(v, i, sub)
			{
				if (json_is_object(sub) &&
				    !rewrite_schema(d, tool, sub, prefix))
					return false;
			}
		}
	}
	return true;
}

/* True when every definition of s can be the component <prefix><name>:
 * absent so far, or already there with the same schema. */
static bool
defs_fit(struct doc *d, const json_t *s, const char *prefix)
{
	char name[OPENAPI_NAME_MAX];

	for (size_t i = 0; i < sizeof(def_homes) / sizeof(def_homes[0]); i++) {
		const char *k;
		json_t *v, *have;

		json_object_foreach(json_object_get(s, def_homes[i]), k, v)
		{
			snprintf(name, sizeof(name), "%s%s", prefix, k);
			have = json_object_get(d->schemas, name);
			if (have != NULL && !json_equal(have, v))
				return false;
		}
	}
	return true;
}

/*
 * The component "<tool>.<part>": a copy of schema whose definitions moved
 * into components.schemas and whose "$ref"s point there.  Returns the
 * component (borrowed from the document), NULL on failure.
 */
static json_t *
hoist(struct doc *d, const char *tool, const char *part, const json_t *schema)
{
	char prefix[OPENAPI_NAME_MAX], name[OPENAPI_NAME_MAX];
	json_t *copy = NULL;

	for (size_t i = 0; i < sizeof(def_homes) / sizeof(def_homes[0]); i++) {
		const char *k;
		json_t *v;

		json_object_foreach(json_object_get(schema, def_homes[i]), k, v)
		{
			if (!component_name_ok(k))
				return fail(d, tool,
					    "a $defs name cannot be a "
					    "component name: use letters, "
					    "digits, '.', '-' or '_'");
		}
	}
	/* Shared names first; the tool's own prefix when one is taken by
	 * another schema. */
	for (int pass = 0; pass < 2 && copy == NULL; pass++) {
		if (pass == 0)
			prefix[0] = '\0';
		else
			snprintf(prefix, sizeof(prefix), "%s.%s.", tool, part);
		if ((copy = json_deep_copy(schema)) == NULL)
			return NULL;
		if (!rewrite_schema(d, tool, copy, prefix)) {
			json_decref(copy);
			return NULL;
		}
		if (!defs_fit(d, copy, prefix)) {
			json_decref(copy);
			copy = NULL;
		}
	}
	if (copy == NULL)
		return fail(d, tool, "its $defs names clash with components");
	for (size_t i = 0; i < sizeof(def_homes) / sizeof(def_homes[0]); i++) {
		const char *k;
		json_t *v;

		json_object_foreach(json_object_get(copy, def_homes[i]), k, v)
		{
			snprintf(name, sizeof(name), "%s%s", prefix, k);
			if (json_object_get(d->schemas, name) == NULL &&
			    json_object_set(d->schemas, name, v) != 0) {
				json_decref(copy);
				return NULL;
			}
		}
		json_object_del(copy, def_homes[i]);
	}
	snprintf(name, sizeof(name), "%s.%s", tool, part);
	if (json_object_set_new(d->schemas, name, copy) != 0)
		return NULL;
	return copy;
}

/* ---- examples ------------------------------------------------------- */

/* An example value for argument name of schema s (new reference). */
static json_t *
example_value(const char *name, const json_t *s)
{
	const json_t *v, *type = json_object_get(s, "type");
	const char *t = json_string_value(type);

	if ((v = json_object_get(s, "default")) != NULL ||
	    (v = json_object_get(s, "const")) != NULL)
		return json_deep_copy(v);
	if ((v = json_array_get(json_object_get(s, "examples"), 0)) != NULL ||
	    (v = json_array_get(json_object_get(s, "enum"), 0)) != NULL)
		return json_deep_copy(v);
	if (json_is_array(type))
		t = json_string_value(json_array_get(type, 0));
	if (t == NULL || strcmp(t, "string") == 0) {
		for (size_t i = 0;
		     i < sizeof(example_args) / sizeof(example_args[0]); i++)
			if (strcmp(example_args[i].arg, name) == 0)
				return json_string(example_args[i].value);
		return json_string("example");
	}
	if (strcmp(t, "integer") == 0 || strcmp(t, "number") == 0) {
		v = json_object_get(s, "minimum");
		return json_is_number(v) ? json_deep_copy(v) : json_integer(1);
	}
	if (strcmp(t, "boolean") == 0)
		return json_false();
	if (strcmp(t, "array") == 0)
		return json_array();
	if (strcmp(t, "null") == 0)
		return json_null();
	return json_object();
}

/*
 * A minimal valid argument object for tool d: its required arguments and
 * those with a default; only the required ones when that is not valid.
 * NULL when neither validates against the tool's inputSchema (a schema
 * whose rules these simple values cannot meet): no example then.
 */
static json_t *
example_args_for(const struct tool_def *def)
{
	const json_t *in = json_object_get(def->def, "inputSchema");
	const json_t *props = json_object_get(in, "properties");
	const json_t *req = json_object_get(in, "required");

	for (int with_defaults = 1; with_defaults >= 0; with_defaults--) {
		json_t *ex = json_object(), *p;
		const char *k;
		bool ok = ex != NULL;

		json_object_foreach((json_t *)props, k, p)
		{
			bool want = with_defaults &&
				    json_object_get(p, "default") != NULL;
			size_t i;
			json_t *r;

			json_array_foreach(req, i, r)
			{
				if (json_is_string(r) &&
				    strcmp(json_string_value(r), k) == 0)
					want = true;
			}
			if (want && ok)
				ok = json_object_set_new(
					     ex, k, example_value(k, p)) == 0;
		}
		if (ok &&
		    jsonschema_validate(def->input, ex, NULL) == STATUS_OK)
			return ex;
		json_decref(ex);
	}
	return NULL;
}

/* ---- operations ----------------------------------------------------- */

/* What an answer carries besides its body (R_*: or-ed). */
enum {
	R_ANSWER = 1,	/* a 200 of a tool: Cache-Control */
	R_GET = 2,	/* a GET: ETag, and 304 */
	R_PAGED = 4,	/* Link to the next page */
	R_MARKDOWN = 8, /* text/markdown with ?view=text */
	R_KIALI = 16,	/* errors as Kiali's {"error"} */
};

static json_t *
header_refs(unsigned flags)
{
	json_t *h = json_object();

	if (json_object_set_new(h, "X-Request-Id",
				ref(REF_HEADERS, "X-Request-Id")) != 0)
		goto bad;
	if ((flags & R_GET) &&
	    json_object_set_new(h, "ETag", ref(REF_HEADERS, "ETag")) != 0)
		goto bad;
	if ((flags & R_ANSWER) &&
	    json_object_set_new(h, "Cache-Control",
				ref(REF_HEADERS, "Cache-Control")) != 0)
		goto bad;
	/* inline: a component only query_spans' route uses would be unused
	 * when that route's set is off */
	if ((flags & R_PAGED) &&
	    json_object_set_new(h, "Link",
				json_pack("{s:s, s:{s:s}}", "description",
					  "The next page, when there is one: "
					  "<...?cursor=...>; rel=\"next\"",
					  "schema", "type", "string")) != 0)
		goto bad;
	return h;
bad:
	json_decref(h);
	return NULL;
}

/* The answer of problems[i]: RFC 9457 problem+json, or on Kiali's route
 * Kiali's application/json {"error": ...} (handlers/base.go
 * RespondWithError). */
static json_t *
problem_response(size_t i, bool kiali)
{
	json_t *h = header_refs(0);

	if (problems[i].header != NULL &&
	    json_object_set_new(h, problems[i].header,
				ref(REF_HEADERS, problems[i].header)) != 0) {
		json_decref(h);
		h = NULL;
	}
	return json_pack(
		"{s:s, s:o, s:{s:{s:o}}}", "description",
		problems[i].description, "headers", h, "content",
		kiali ? "application/json" : "application/problem+json",
		"schema", ref(REF_SCHEMAS, kiali ? "KialiError" : "Problem"));
}

/*
 * The responses of an operation answering with schema ok (stolen) as
 * application/json (R_* flags: its headers, text/markdown, Kiali's
 * errors): 200, 304 on a GET, then every problem.
 */
static json_t *
responses(json_t *ok, const char *what, unsigned flags)
{
	json_t *r = json_object(), *content;

	content = json_pack("{s:{s:o}}", "application/json", "schema", ok);
	if ((flags & R_MARKDOWN) && content != NULL &&
	    json_object_set_new(content, "text/markdown",
				json_pack("{s:{s:s, s:s}}", "schema", "type",
					  "string", "description",
					  "The answer's Markdown text "
					  "(?view=text)")) != 0) {
		json_decref(content);
		content = NULL;
	}
	if (json_object_set_new(r, "200",
				json_pack("{s:s, s:o, s:o}", "description",
					  what, "headers", header_refs(flags),
					  "content", content)) != 0)
		goto bad;
	if ((flags & R_GET) &&
	    json_object_set_new(r, "304",
				json_pack("{s:s, s:o}", "description",
					  "Not modified: If-None-Match names "
					  "the current ETag",
					  "headers", header_refs(R_GET))) != 0)
		goto bad;
	for (size_t i = 0; i < sizeof(problems) / sizeof(problems[0]); i++)
		if (json_object_set_new(r, problems[i].status,
					(flags & R_KIALI)
						? problem_response(i, true)
						: ref(REF_RESPONSES,
						      problems[i].name)) != 0)
			goto bad;
	return r;
bad:
	json_decref(r);
	return NULL;
}

static const char *
tool_summary(const struct tool_def *def)
{
	const char *s = json_string_value(json_object_get(def->def, "title"));

	return s != NULL ? s : def->name;
}

/* POST /api/v1/tools/<name>. */
static json_t *
tool_post(const struct tool_def *def)
{
	char name[OPENAPI_NAME_MAX];
	const char *desc =
		json_string_value(json_object_get(def->def, "description"));
	json_t *media, *ex = example_args_for(def), *op;

	snprintf(name, sizeof(name), "%s.input", def->name);
	media = json_pack("{s:o}", "schema", ref(REF_SCHEMAS, name));
	if (ex != NULL && media != NULL &&
	    json_object_set_new(media, "examples",
				json_pack("{s:{s:s, s:o}}", "minimal",
					  "summary",
					  "Required arguments and defaults",
					  "value", ex)) != 0) {
		json_decref(media);
		media = NULL;
	} else if (media == NULL)
		json_decref(ex);
	snprintf(name, sizeof(name), "%s.answer", def->name);
	op = json_pack("{s:s, s:s, s:s, s:[s], s:[o], s:{s:s, s:b, s:{s:o}}, "
		       "s:o}",
		       "operationId", def->name, "summary", tool_summary(def),
		       "description", desc != NULL ? desc : "", "tags",
		       def->set, "parameters", ref(REF_PARAMETERS, "view"),
		       "requestBody", "description",
		       "The tool's arguments; an empty body is {}", "required",
		       0, "content", "application/json", media, "responses",
		       responses(ref(REF_SCHEMAS, name),
				 "The tool's answer: its structured data and "
				 "its Markdown text",
				 R_ANSWER | R_MARKDOWN));
	return op != NULL ? json_pack("{s:o}", "post", op) : NULL;
}

/* A query or path parameter for argument arg of schema s (borrowed). */
static json_t *
parameter(const char *name, const char *in, bool required, const json_t *s,
	  const char *arg)
{
	const char *desc = json_string_value(json_object_get(s, "description"));
	const char *type = json_string_value(json_object_get(s, "type"));
	json_t *p, *copy;

	if (s == NULL || (strcmp(in, "path") == 0 &&
			  (type == NULL || strcmp(type, "string") != 0))) {
		/* path segments are strings whatever the argument says */
		copy = json_pack("{s:s}", "type", "string");
		desc = NULL;
	} else
		copy = json_deep_copy(s);
	p = json_pack("{s:s, s:s, s:b}", "name", name, "in", in, "required",
		      required);
	if (p == NULL || copy == NULL)
		goto bad;
	if (desc != NULL &&
	    json_object_set_new(p, "description", json_string(desc)) != 0)
		goto bad;
	if (type != NULL && strcmp(type, "object") == 0) {
		/* no URL style spells an object of any shape: JSON text */
		if (json_object_set_new(p, "content",
					json_pack("{s:{s:o}}",
						  "application/json", "schema",
						  copy)) != 0)
			goto bad_p;
	} else {
		if (type != NULL && strcmp(type, "array") == 0 &&
		    (json_object_set_new(p, "style", json_string("form")) !=
			     0 ||
		     json_object_set_new(p, "explode", json_true()) != 0))
			goto bad;
		if (json_object_set_new(p, "schema", copy) != 0)
			goto bad_p;
	}
	if (required &&
	    json_object_set_new(p, "example", example_value(arg, s)) != 0)
		goto bad_p;
	return p;
bad:
	json_decref(copy);
bad_p:
	json_decref(p);
	return NULL;
}

static bool
in_array(const json_t *a, const char *s)
{
	size_t i;
	json_t *v;

	json_array_foreach(a, i, v)
	{
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return true;
	}
	return false;
}

/* GET <route>: its path parameters, the tool's other arguments as query
 * parameters (input is the tool's "<tool>.input" component). */
static json_t *
route_get(const struct rest_route *rt, const struct tool_def *def,
	  const json_t *input)
{
	const json_t *props = json_object_get(input, "properties");
	const json_t *req = json_object_get(input, "required");
	json_t *params = json_array(), *p, *op;
	char name[OPENAPI_NAME_MAX];
	const char *k;
	bool ok = params != NULL;

	for (size_t i = 0; i < rt->nparams && ok; i++)
		ok = json_array_append_new(
			     params,
			     parameter(
				     rt->params[i].name, "path", true,
				     json_object_get(props, rt->params[i].arg),
				     rt->params[i].arg)) == 0;
	json_object_foreach((json_t *)props, k, p)
	{
		bool path_arg = false;

		for (size_t i = 0; i < rt->nparams; i++)
			if (strcmp(rt->params[i].arg, k) == 0)
				path_arg = true;
		if (!path_arg && ok)
			ok = json_array_append_new(params,
						   parameter(k, "query",
							     in_array(req, k),
							     p, k)) == 0;
	}
	if (ok && json_object_get(props, "view") == NULL)
		ok = json_array_append_new(params,
					   ref(REF_PARAMETERS, "view")) == 0;
	if (ok)
		ok = json_array_append_new(
			     params, ref(REF_PARAMETERS, "If-None-Match")) == 0;
	if (!ok) {
		json_decref(params);
		return NULL;
	}
	snprintf(name, sizeof(name), "%s.answer", def->name);
	op = json_pack(
		"{s:s+, s:s, s:s++, s:[s], s:o, s:o}", "operationId",
		rt->operation != NULL ? rt->operation : def->name,
		rt->operation != NULL ? "" : "_resource", "summary",
		rt->summary, "description", "Runs the tool ", def->name,
		" with the path parameters and the query parameters as its "
		"arguments (the query parameters are the tool's other "
		"arguments, typed by its inputSchema).",
		"tags", def->set, "parameters", params, "responses",
		responses(ref(REF_SCHEMAS, name),
			  "The tool's answer: its structured data and its "
			  "Markdown text",
			  R_ANSWER | R_GET | R_MARKDOWN |
				  (json_object_get(props, "cursor") != NULL
					   ? R_PAGED
					   : 0)));
	return op != NULL ? json_pack("{s:o}", "get", op) : NULL;
}

/* The "<tool>.answer" schema: {"tool", "data", "text"}. */
static json_t *
answer_schema(const struct tool_def *def, bool has_output)
{
	char name[OPENAPI_NAME_MAX];
	json_t *data;

	snprintf(name, sizeof(name), "%s.output", def->name);
	data = has_output ? ref(REF_SCHEMAS, name)
			  : json_pack("{s:s}", "description",
				      "The structured content, if any (the "
				      "tool declares no outputSchema)");
	return json_pack("{s:s, s:[s,s,s], s:{s:{s:s, s:s}, s:o, "
			 "s:{s:s, s:s}}}",
			 "type", "object", "required", "tool", "data", "text",
			 "properties", "tool", "type", "string", "const",
			 def->name, "data", data, "text", "type", "string",
			 "description", "The answer as Markdown");
}

/* GET /api/v1/tools. */
static json_t *
catalog_get(void)
{
	json_t *op = json_pack(
		"{s:s, s:s, s:s, s:[s], s:[o], s:o}", "operationId",
		"tool_catalog", "summary", "The enabled tools", "description",
		"Every enabled tool with its schemas and annotations, as MCP's "
		"tools/list lists them; each is POST /api/v1/tools/{name}.",
		"tags", "catalog", "parameters",
		ref(REF_PARAMETERS, "If-None-Match"), "responses",
		responses(json_pack("{s:s, s:[s], s:{s:{s:s, s:o}}}", "type",
				    "object", "required", "tools", "properties",
				    "tools", "type", "array", "items",
				    ref(REF_SCHEMAS, "ToolInfo")),
			  "The enabled tools", R_ANSWER | R_GET));

	return op != NULL ? json_pack("{s:o}", "get", op) : NULL;
}

/* POST /api/chat/mcp/{tool_name}: Kiali's handlers/ai.go ChatMCP; the
 * body is the arguments (none: {}), the answer the tool's result: one of
 * outputs (stolen), or anything when NULL (a tool declares none). */
static json_t *
kiali_post(json_t *names, json_t *inputs, json_t *outputs)
{
	json_t *op = json_pack(
		"{s:s, s:s, s:s, s:[s], s:[{s:s, s:s, s:b, s:{s:s, s:o}, "
		"s:s}], "
		"s:{s:b, s:{s:{s:{s:s, s:o}}}}, s:o}",
		"operationId", "kiali_chat_mcp", "summary",
		"Call a tool the way Kiali's UI does", "description",
		"Kiali's POST /api/chat/mcp/{tool_name}: the JSON body is the "
		"tool's arguments (an empty body is {}), the answer the tool's "
		"structured data alone, as data in POST /api/v1/tools/{name}.",
		"tags", "kiali", "parameters", "name", "tool_name", "in",
		"path", "required", 1, "schema", "type", "string", "enum",
		names, "description", "An enabled tool", "requestBody",
		"required", 0, "content", "application/json", "schema",
		"description", "The tool's arguments", "anyOf", inputs,
		"responses",
		responses(outputs != NULL
				  ? json_pack("{s:s, s:o}", "description",
					      "The tool's structured data",
					      "anyOf", outputs)
				  : json_pack("{s:s}", "description",
					      "The tool's structured data, if "
					      "any"),
			  "The tool's structured data", R_ANSWER | R_KIALI));

	return op != NULL ? json_pack("{s:o}", "post", op) : NULL;
}

/* ---- components ----------------------------------------------------- */

static json_t *
problem_schemas(void)
{
	return json_pack(
		"{s:{s:s, s:s, s:{s:{s:s, s:s, s:s}, s:{s:s}, s:{s:s, s:i, "
		"s:i}, s:{s:s}, s:{s:s, s:s}, s:{s:s, s:o}}}, "
		"s:{s:s, s:[s,s], s:{s:{s:s, s:s}, s:{s:s}, s:{s:s}, "
		"s:{s:s}}}, "
		"s:{s:s, s:[s,s], s:{s:{s:s}, s:{s:s}, s:{s:s}, s:{s:s}, "
		"s:{s:s}, s:{s:s}}}, "
		"s:{s:s, s:s, s:[s], s:{s:{s:s}, s:{s:s}}}}",
		"Problem", "type", "object", "description",
		"RFC 9457 problem details", "properties", "type", "type",
		"string", "format", "uri-reference", "description",
		"What kind of problem (a URI; about:blank when only the status "
		"says it)",
		"title", "type", "string", "status", "type", "integer",
		"minimum", 400, "maximum", 599, "detail", "type", "string",
		"instance", "type", "string", "format", "uri-reference",
		"errors", "type", "array", "items",
		ref(REF_SCHEMAS, "ProblemFieldError"),
		/* one wrong argument */
		"ProblemFieldError", "type", "object", "required", "field",
		"message", "properties", "field", "type", "string",
		"description", "The argument: its name or a JSON pointer",
		"expected", "type", "string", "given", "description",
		"What was given", "message", "type", "string",
		/* an entry of GET /api/v1/tools */
		"ToolInfo", "type", "object", "required", "name", "inputSchema",
		"properties", "name", "type", "string", "title", "type",
		"string", "description", "type", "string", "inputSchema",
		"type", "object", "outputSchema", "type", "object",
		"annotations", "type", "object",
		/* Kiali's error body (handlers/base.go responseError) */
		"KialiError", "type", "object", "description",
		"Kiali's error body, on /api/chat/mcp/ alone", "required",
		"error", "properties", "error", "type", "string", "detail",
		"type", "string");
}

static json_t *
problem_responses(void)
{
	json_t *r = json_object();

	for (size_t i = 0; i < sizeof(problems) / sizeof(problems[0]); i++)
		if (json_object_set_new(r, problems[i].name,
					problem_response(i, false)) != 0) {
			json_decref(r);
			return NULL;
		}
	return r;
}

static json_t *
header_components(void)
{
	json_t *h = json_object();

	for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++)
		if (json_object_set_new(
			    h, headers[i].name,
			    json_pack("{s:s, s:{s:s}}", "description",
				      headers[i].description, "schema", "type",
				      headers[i].type)) != 0) {
			json_decref(h);
			return NULL;
		}
	return h;
}

static json_t *
parameter_components(void)
{
	return json_pack(
		"{s:{s:s, s:s, s:b, s:s, s:{s:s, s:[s,s], s:s}}, "
		"s:{s:s, s:s, s:b, s:s, s:{s:s}}}",
		"view", "name", "view", "in", "query", "required", 0,
		"description",
		"json (the default): {tool, data, text}; text: the answer's "
		"Markdown alone, as text/markdown",
		"schema", "type", "string", "enum", "json", "text", "default",
		"json", "If-None-Match", "name", "If-None-Match", "in",
		"header", "required", 0, "description",
		"The ETag of an earlier answer: 304 when it is still current",
		"schema", "type", "string");
}

static const char *
set_description(const char *set)
{
	for (size_t i = 0; i < sizeof(set_tags) / sizeof(set_tags[0]); i++)
		if (strcmp(set_tags[i].set, set) == 0)
			return set_tags[i].description;
	return "Tools of this set";
}

static bool
add_tag(json_t *tags, const char *set)
{
	size_t i;
	json_t *t;

	json_array_foreach(tags, i, t)
	{
		if (strcmp(json_string_value(json_object_get(t, "name")),
			   set) == 0)
			return true;
	}
	return json_array_append_new(
		       tags, json_pack("{s:s, s:s}", "name", set, "description",
				       set_description(set))) == 0;
}

/* The tools of t that the facade serves: listed ones. */
static const struct tool_def *
served(const struct tools *t, const char *name)
{
	const struct tool_def *def = tools_find(t, name);

	return def != NULL && !def->unlisted_callable ? def : NULL;
}

/* Paths, tags and tool schemas into root; false on failure. */
static bool
add_tools(struct doc *d, const struct tools *t, json_t *paths, json_t *tags)
{
	json_t *names = json_array(), *inputs = json_array(),
	       *outputs = json_array();
	char path[OPENAPI_NAME_MAX + 32], name[OPENAPI_NAME_MAX];
	/* outputs turns NULL once a tool has no outputSchema */
	bool ok = names != NULL && inputs != NULL && outputs != NULL;

	ok = ok &&
	     json_object_set_new(paths, "/api/v1/tools", catalog_get()) == 0;
	for (size_t i = 0; i < tools_count(t) && ok; i++) {
		const struct tool_def *def = tools_at(t, i);
		const json_t *out = json_object_get(def->def, "outputSchema");

		if (def->unlisted_callable)
			continue;
		if (hoist(d, def->name, "input",
			  json_object_get(def->def, "inputSchema")) == NULL ||
		    (out != NULL && hoist(d, def->name, "output", out) == NULL))
			ok = false;
		snprintf(name, sizeof(name), "%s.answer", def->name);
		ok = ok &&
		     json_object_set_new(d->schemas, name,
					 answer_schema(def, out != NULL)) == 0;
		snprintf(path, sizeof(path), "/api/v1/tools/%s", def->name);
		ok = ok &&
		     json_object_set_new(paths, path, tool_post(def)) == 0;
		ok = ok && add_tag(tags, def->set);
		ok = ok &&
		     json_array_append_new(names, json_string(def->name)) == 0;
		snprintf(name, sizeof(name), "%s.input", def->name);
		ok = ok &&
		     json_array_append_new(inputs, ref(REF_SCHEMAS, name)) == 0;
		snprintf(name, sizeof(name), "%s.output", def->name);
		if (out == NULL) {
			json_decref(outputs);
			outputs = NULL;
		} else if (outputs != NULL)
			ok = ok &&
			     json_array_append_new(outputs,
						   ref(REF_SCHEMAS, name)) == 0;
	}
	for (size_t i = 0; i < rest_nroutes && ok; i++) {
		const struct tool_def *def = served(t, rest_routes[i].tool);

		if (def == NULL)
			continue; /* its set is off: the facade answers 404 */
		snprintf(name, sizeof(name), "%s.input", def->name);
		ok = json_object_set_new(
			     paths, rest_routes[i].path,
			     route_get(&rest_routes[i], def,
				       json_object_get(d->schemas, name))) == 0;
	}
	ok = ok && add_tag(tags, "catalog") && add_tag(tags, "kiali");
	if (ok && json_array_size(names) > 0) {
		ok = json_object_set_new(paths, "/api/chat/mcp/{tool_name}",
					 kiali_post(names, inputs, outputs)) ==
		     0;
		names = inputs = outputs = NULL;
	}
	json_decref(names);
	json_decref(inputs);
	json_decref(outputs);
	return ok;
}

int
openapi_build(const struct tools *t, const struct config *cfg, json_t **out,
	      char *err, size_t errlen)
{
	struct doc d = {.rc = STATUS_NOMEM, .err = err, .errlen = errlen};
	bool auth = cfg->auth.keys.n > 0;
	json_t *root = NULL, *paths = json_object(), *tags = json_array();
	json_t *components;

	*out = NULL;
	if (err != NULL && errlen > 0)
		snprintf(err, errlen, "out of memory");
	components = json_pack(
		"{s:o, s:o, s:o, s:o}", "schemas", problem_schemas(),
		"responses", problem_responses(), "headers",
		header_components(), "parameters", parameter_components());
	if (components == NULL || paths == NULL || tags == NULL)
		goto out;
	d.schemas = json_object_get(components, "schemas");
	if (!add_tools(&d, t, paths, tags))
		goto out;
	if (auth &&
	    json_object_set_new(
		    components, "securitySchemes",
		    json_pack("{s:{s:s, s:s, s:s}}", "bearer", "type", "http",
			      "scheme", "bearer", "description",
			      "An API key whose sha256 hash is in [auth] "
			      "keys, as Authorization: Bearer <key> (the "
			      "same keys as MCP)")) != 0)
		goto out;
	root = json_pack(
		"{s:s, s:{s:s, s:s, s:s}, s:[{s:s}], s:o, s:o, s:o}", "openapi",
		"3.1.0", "info", "title", "Sextant REST API", "version",
		SEXTANT_VERSION, "description",
		"Sextant's tools as plain HTTP, for UI backends and curl: the "
		"same registry, argument validation, worker pool, limits and "
		"timeouts as MCP.  POST /api/v1/tools/{name} runs any enabled "
		"tool; the GETs under /api/v1 map their path and query "
		"parameters onto one tool's arguments.  Errors are RFC 9457 "
		"problem details.  Generated from the enabled tools: it "
		"changes when [tools] enables or disables some.",
		"servers", "url", "/", "tags", tags, "paths", paths,
		"components", components);
	tags = paths = components = NULL;
	if (root == NULL)
		goto out;
	/* No keys, no authentication: an empty list says so (OAS 3.1.0
	 * 4.8.1.1) rather than leaving it unsaid. */
	if (json_object_set_new(root, "security",
				auth ? json_pack("[{s:[]}]", "bearer")
				     : json_array()) != 0) {
		json_decref(root);
		root = NULL;
		goto out;
	}
	*out = root;
	d.rc = STATUS_OK;
out:
	json_decref(paths);
	json_decref(tags);
	json_decref(components);
	return d.rc;
}
