/*
 * test_openapi.c - unit tests for server/rest/openapi: the OpenAPI
 * document built from the real tool registry (boot_tool_families) for
 * the default tools, every set, the conformance fixtures and smaller
 * sets: a path per enabled tool with a valid example, every route of
 * rest_routes with its parameters, every "$ref" resolving inside the
 * document, the error responses, and the security scheme with API keys.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "boot/boot.h"
#include "conf/config.h"
#include "json/jsonschema.h"
#include "mcp/tools.h"
#include "rest/openapi.h"
#include "rest/routes.h"

static const char every_set[] =
	"[tools]\n"
	"enabled_sets = [\"core\", \"query\", \"spans\", \"genai\", "
	"\"grafana\", \"mesh\", \"ebpf\", \"kiali\", \"istio\"]\n"
	"deprecated_aliases = true\n"
	"[auth]\n"
	"keys = [\"sha256:"
	"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"]\n"
	"[prometheus.local]\n"
	"url = \"http://127.0.0.1:9090\"\n";

struct built {
	struct tools *tools;
	json_t *doc;
};

static struct built
build(const char *toml)
{
	static char *const no_env[] = {NULL};
	struct config *cfg = NULL;
	struct config_error cerr;
	struct built b = {NULL, NULL};
	char err[512] = "";

	if (config_load_text(toml, strlen(toml), "test.toml", no_env, &cfg,
			     &cerr) != STATUS_OK)
		fail_msg("config: %s: %s", cerr.key, cerr.msg);
	if (tools_load(boot_tool_families, cfg, &b.tools, err, sizeof(err)) !=
	    STATUS_OK)
		fail_msg("tools_load: %s", err);
	if (openapi_build(b.tools, cfg, &b.doc, err, sizeof(err)) != STATUS_OK)
		fail_msg("openapi_build: %s", err);
	config_free(cfg);
	assert_non_null(b.doc);
	return b;
}

static void
built_free(struct built *b)
{
	json_decref(b->doc);
	tools_unref(b->tools);
}

/* The value at a JSON pointer in v ("/a/b~1c", or "#/a/b~1c" as a $ref
 * names it), or NULL. */
static json_t *
resolve(json_t *v, const char *ref)
{
	char tok[512];
	const char *p = ref[0] == '#' ? ref + 1 : ref;

	if (*p++ != '/')
		return NULL;
	while (v != NULL) {
		size_t n = 0;

		while (*p != '\0' && *p != '/' && n + 1 < sizeof(tok)) {
			if (p[0] == '~' && p[1] == '1') {
				tok[n++] = '/';
				p += 2;
			} else if (p[0] == '~' && p[1] == '0') {
				tok[n++] = '~';
				p += 2;
			} else
				tok[n++] = *p++;
		}
		tok[n] = '\0';
		if (json_is_array(v)) {
			char *end;
			unsigned long i = strtoul(tok, &end, 10);

			v = *end == '\0' ? json_array_get(v, i) : NULL;
		} else
			v = json_object_get(v, tok);
		if (*p != '/')
			break;
		p++;
	}
	return v;
}

/* Counts the "$ref"s under v; fails on one that does not resolve. */
static size_t
check_refs(json_t *doc, json_t *v)
{
	const char *k;
	json_t *sub;
	size_t i, n = 0;

	if (json_is_object(v)) {
		json_object_foreach(v, k, sub)
		{
			if (strcmp(k, "$ref") == 0 && json_is_string(sub)) {
				if (resolve(doc, json_string_value(sub)) ==
				    NULL)
					fail_msg("unresolved $ref %s",
						 json_string_value(sub));
				n++;
			} else
				n += check_refs(doc, sub);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, sub) n += check_refs(doc, sub);
	}
	return n;
}

static json_t *
path_op(json_t *doc, const char *path, const char *method)
{
	return json_object_get(
		json_object_get(json_object_get(doc, "paths"), path), method);
}

/* A parameter of op by name (its $ref resolved), or NULL. */
static json_t *
param(json_t *doc, json_t *op, const char *name)
{
	size_t i;
	json_t *p;

	json_array_foreach(json_object_get(op, "parameters"), i, p)
	{
		const char *r = json_string_value(json_object_get(p, "$ref"));
		json_t *q = r != NULL ? resolve(doc, r) : p;

		if (strcmp(json_string_value(json_object_get(q, "name")),
			   name) == 0)
			return q;
	}
	return NULL;
}

static const char *const problem_codes[] = {
	"400", "401", "403", "404", "405", "406", "413",
	"415", "422", "429", "500", "503", "504",
};

/* Every error status on op, as an RFC 9457 problem. */
static void
check_problems(json_t *doc, json_t *op)
{
	json_t *rs = json_object_get(op, "responses");

	for (size_t i = 0; i < sizeof(problem_codes) / sizeof(problem_codes[0]);
	     i++) {
		json_t *r = json_object_get(rs, problem_codes[i]);
		const char *ref;

		assert_non_null(r);
		ref = json_string_value(json_object_get(r, "$ref"));
		assert_non_null(ref);
		r = resolve(doc, ref);
		assert_string_equal(
			json_string_value(
				resolve(r, "/content/application~1problem+json/"
					   "schema/$ref")),
			"#/components/schemas/Problem");
	}
	assert_non_null(
		json_object_get(resolve(doc, "#/components/responses/"
					     "ServiceUnavailable/headers"),
				"Retry-After"));
}

/*
 * Every enabled tool has its POST path, named by its operationId, whose
 * body is its inputSchema and whose example is valid against it (all
 * have one unless !all_examples); Kiali's route lists exactly those
 * tools and answers its errors as Kiali does.
 */
static size_t
check_tool_paths(struct built *b, bool all_examples)
{
	json_t *kiali = path_op(b->doc, "/api/chat/mcp/{tool_name}", "post");
	json_t *names = json_object_get(
		json_object_get(param(b->doc, kiali, "tool_name"), "schema"),
		"enum");
	size_t n = 0;

	for (size_t i = 0; i < tools_count(b->tools); i++) {
		const struct tool_def *d = tools_at(b->tools, i);
		char path[256], ref[256];
		json_t *op, *media, *ex, *in;

		snprintf(path, sizeof(path), "/api/v1/tools/%s", d->name);
		op = path_op(b->doc, path, "post");
		if (op == NULL)
			fail_msg("no POST %s", path);
		assert_string_equal(
			json_string_value(json_object_get(op, "operationId")),
			d->name);
		media = resolve(
			op, "/requestBody/content/application~1json/schema");
		snprintf(ref, sizeof(ref), "#/components/schemas/%s.input",
			 d->name);
		assert_string_equal(
			json_string_value(json_object_get(media, "$ref")), ref);
		in = resolve(b->doc, ref);
		assert_non_null(in);
		assert_null(json_object_get(in, "$defs"));
		ex = resolve(op,
			     "/requestBody/content/application~1json/examples/"
			     "minimal/value");
		/* a schema whose anyOf needs more than its required and
		 * defaulted arguments has none */
		if (ex == NULL && (all_examples ||
				   strcmp(d->name, "json_schema_2020_12_tool")))
			fail_msg("%s: no example", d->name);
		if (ex != NULL &&
		    jsonschema_validate(d->input, ex, NULL) != STATUS_OK)
			fail_msg("%s: example not valid", d->name);
		assert_non_null(param(b->doc, op, "view"));
		assert_non_null(
			resolve(op, "/responses/200/content/text~1markdown"));
		check_problems(b->doc, op);
		assert_true(json_array_size(names) > i);
		assert_string_equal(json_string_value(json_array_get(names, i)),
				    d->name);
		n++;
	}
	assert_int_equal(json_array_size(names), n);
	/* Kiali's route answers its errors as Kiali does: {"error"} */
	for (size_t i = 0; i < sizeof(problem_codes) / sizeof(problem_codes[0]);
	     i++) {
		char ptr[128];

		snprintf(ptr, sizeof(ptr),
			 "/responses/%s/content/application~1json/schema/$ref",
			 problem_codes[i]);
		assert_string_equal(json_string_value(resolve(kiali, ptr)),
				    "#/components/schemas/KialiError");
	}
	return n;
}

/* Each route of rest_routes whose tool is enabled is a GET with its path
 * parameters and the tool's other arguments as query parameters; the
 * others are absent.  Returns how many are present. */
static size_t
check_routes(struct built *b)
{
	size_t present = 0;

	for (size_t i = 0; i < rest_nroutes; i++) {
		const struct rest_route *rt = &rest_routes[i];
		const struct tool_def *d = tools_find(b->tools, rt->tool);
		json_t *op = path_op(b->doc, rt->path, "get");
		const char *k;
		json_t *prop, *p;

		if (d == NULL || d->unlisted_callable) {
			if (op != NULL)
				fail_msg("%s present, %s off", rt->path,
					 rt->tool);
			assert_null(json_object_get(
				json_object_get(b->doc, "paths"), rt->path));
			continue;
		}
		if (op == NULL)
			fail_msg("no GET %s", rt->path);
		present++;
		for (size_t j = 0; j < rt->nparams; j++) {
			p = param(b->doc, op, rt->params[j].name);
			assert_non_null(p);
			assert_string_equal(
				json_string_value(json_object_get(p, "in")),
				"path");
			assert_true(
				json_is_true(json_object_get(p, "required")));
			assert_non_null(json_object_get(p, "example"));
		}
		json_object_foreach(
			json_object_get(json_object_get(d->def, "inputSchema"),
					"properties"),
			k, prop)
		{
			bool is_path = false;

			for (size_t j = 0; j < rt->nparams; j++)
				if (strcmp(rt->params[j].arg, k) == 0)
					is_path = true;
			if (is_path)
				continue;
			p = param(b->doc, op, k);
			if (p == NULL)
				fail_msg("%s: no query parameter %s", rt->path,
					 k);
			assert_string_equal(
				json_string_value(json_object_get(p, "in")),
				"query");
		}
		assert_non_null(resolve(op, "/responses/200/headers/ETag"));
		assert_non_null(resolve(op, "/responses/304"));
		check_problems(b->doc, op);
	}
	return present;
}

static void
test_default_set(void **state)
{
	struct built b = build("");
	json_t *spans, *p;

	(void)state;
	assert_string_equal(
		json_string_value(json_object_get(b.doc, "openapi")), "3.1.0");
	assert_string_equal(json_string_value(resolve(b.doc, "/info/version")),
			    SEXTANT_VERSION);
	assert_true(check_tool_paths(&b, true) == tools_count(b.tools));
	assert_true(tools_count(b.tools) >= 10);
	/* every route, the graph's too (the mesh set is a default one) */
	assert_int_equal(check_routes(&b), rest_nroutes);
	assert_non_null(path_op(b.doc, "/api/v1/graph", "get"));
	assert_non_null(path_op(b.doc, "/api/v1/tools", "get"));
	assert_true(check_refs(b.doc, b.doc) > 100);
	/* query_spans pages: its GET answers with a Link header */
	spans = path_op(b.doc, "/api/v1/spans", "get");
	assert_non_null(resolve(spans, "/responses/200/headers/Link"));
	assert_null(resolve(path_op(b.doc, "/api/v1/services", "get"),
			    "/responses/200/headers/Link"));
	/* an array argument is a repeated query parameter, an object one
	 * JSON text */
	p = param(b.doc, path_op(b.doc, "/api/v1/metrics/{name}", "get"),
		  "group_by");
	assert_string_equal(json_string_value(json_object_get(p, "style")),
			    "form");
	assert_true(json_is_true(json_object_get(p, "explode")));
	p = param(b.doc, path_op(b.doc, "/api/v1/metrics/{name}", "get"),
		  "attributes");
	assert_non_null(json_object_get(json_object_get(p, "content"),
					"application/json"));
	/* shared output shapes are one component, referenced */
	assert_non_null(resolve(b.doc, "#/components/schemas/metric"));
	assert_non_null(resolve(b.doc, "#/components/schemas/span"));
	/* no keys: no authentication, said explicitly */
	assert_true(json_is_array(json_object_get(b.doc, "security")));
	assert_int_equal(json_array_size(json_object_get(b.doc, "security")),
			 0);
	assert_null(json_object_get(json_object_get(b.doc, "components"),
				    "securitySchemes"));
	built_free(&b);
}

static void
test_every_set(void **state)
{
	struct built b = build(every_set);
	json_t *sec;

	(void)state;
	assert_true(check_tool_paths(&b, true) == tools_count(b.tools));
	assert_int_equal(check_routes(&b), rest_nroutes);
	assert_non_null(path_op(b.doc, "/api/v1/graph", "get"));
	assert_non_null(
		path_op(b.doc, "/api/v1/tools/query_beyla_traces", "post"));
	assert_non_null(
		path_op(b.doc, "/api/v1/tools/query_grafana_metrics", "post"));
	assert_true(check_refs(b.doc, b.doc) > 100);
	sec = json_array_get(json_object_get(b.doc, "security"), 0);
	assert_non_null(json_object_get(sec, "bearer"));
	assert_string_equal(
		json_string_value(resolve(
			b.doc, "#/components/securitySchemes/bearer/scheme")),
		"bearer");
	built_free(&b);
}

/* The fixtures' 2020-12 schema: its $defs move into components, its
 * $ref follows them. */
static void
test_conformance_defs(void **state)
{
	struct built b = build("[conformance]\nenabled = true\n");
	json_t *in;

	(void)state;
	assert_int_equal(check_routes(&b), 0);
	check_tool_paths(&b, false);
	in = resolve(b.doc, "#/components/schemas/"
			    "json_schema_2020_12_tool.input");
	assert_non_null(in);
	assert_null(json_object_get(in, "$defs"));
	assert_string_equal(
		json_string_value(resolve(
			b.doc, "#/components/schemas/json_schema_2020_12_tool."
			       "input/properties/address/$ref")),
		"#/components/schemas/address");
	assert_non_null(resolve(b.doc, "#/components/schemas/address"));
	check_refs(b.doc, b.doc);
	built_free(&b);
}

/* Disabling a set or a tool takes its paths, routes and tag away. */
static void
test_disabled(void **state)
{
	struct built b = build("[tools]\nenabled_sets = [\"core\", "
			       "\"query\", \"spans\"]\n"
			       "disabled = [\"list_services\"]\n");
	size_t i;
	json_t *t;

	(void)state;
	check_tool_paths(&b, true);
	assert_int_equal(check_routes(&b), 6);
	assert_null(path_op(b.doc, "/api/v1/tools/get_session", "post"));
	assert_null(path_op(b.doc, "/api/v1/tools/list_services", "post"));
	assert_null(path_op(b.doc, "/api/v1/sessions/{session_id}", "get"));
	assert_null(path_op(b.doc, "/api/v1/genai/usage", "get"));
	assert_null(path_op(b.doc, "/api/v1/services", "get"));
	assert_non_null(path_op(b.doc, "/api/v1/tools/get_trace", "post"));
	json_array_foreach(json_object_get(b.doc, "tags"), i, t)
	{
		assert_string_not_equal(
			json_string_value(json_object_get(t, "name")), "genai");
	}
	check_refs(b.doc, b.doc);
	built_free(&b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_set),
		cmocka_unit_test(test_every_set),
		cmocka_unit_test(test_conformance_defs),
		cmocka_unit_test(test_disabled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
