/*
 * conformance_fixtures.c - the resources, resource template and prompts the
 * official MCP conformance suite 0.1.16 reads (MCP-DIGEST.md B2), registered
 * in the catalog at start-up when [conformance] enabled = true.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/status.h"
#include "conformance/conformance.h"
#include "mcp/catalog.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

const char conformance_png_1x1[] =
	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAF"
	"BQIAX8jx0gAAAABJRU5ErkJggg==";

#define TEMPLATE_PREFIX "test://template/"
#define TEMPLATE_SUFFIX "/data"

/*
 * {id} of test://template/{id}/data: the suite sends "123"; 128 bytes is
 * far more than any sensible id and keeps the echoed text small.
 */
#define TEMPLATE_ID_MAX 128

/* Prompt arguments echoed into messages are refused above this size. */
#define PROMPT_ARG_MAX 4096

/* completion/complete may return at most 100 values (MCP completion). */
#define COMPLETION_VALUES_MAX 100

/* A contents array with one text entry.  NULL on ENOMEM. */
static json_t *
text_contents(const char *uri, const char *mime_type, const char *text)
{
	return json_pack("[{s:s,s:s,s:s}]", "uri", uri, "mimeType", mime_type,
			 "text", text);
}

static int
read_static_text(const char *uri, void *arg, json_t **contents)
{
	(void)uri;
	(void)arg;
	*contents = text_contents("test://static-text", "text/plain",
				  "This is the content of the static text "
				  "resource.");
	return *contents ? STATUS_OK : STATUS_NOMEM;
}

static int
read_static_binary(const char *uri, void *arg, json_t **contents)
{
	(void)uri;
	(void)arg;
	*contents =
		json_pack("[{s:s,s:s,s:s}]", "uri", "test://static-binary",
			  "mimeType", "image/png", "blob", conformance_png_1x1);
	return *contents ? STATUS_OK : STATUS_NOMEM;
}

static int
read_watched(const char *uri, void *arg, json_t **contents)
{
	(void)uri;
	(void)arg;
	*contents = text_contents("test://watched-resource", "text/plain",
				  "Watched resource content");
	return *contents ? STATUS_OK : STATUS_NOMEM;
}

static int
is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	       (c >= 'A' && c <= 'F');
}

/*
 * True when s[0..len) is one RFC 3986 path segment (pchar: unreserved,
 * pct-encoded, sub-delims, ':' and '@'), which is what RFC 6570 simple
 * expansion of {id} produces.  This rules out '/', '?', '#', spaces,
 * control bytes and non-ASCII, so the id is safe to echo.
 */
static int
is_path_segment(const char *s, size_t len)
{
	size_t i;

	if (len == 0)
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') ||
		    (c != '\0' && strchr("-._~!$&'()*+,;=:@", c)))
			continue;
		if (c == '%' && i + 2 < len && is_hex(s[i + 1]) &&
		    is_hex(s[i + 2])) {
			i += 2;
			continue;
		}
		return 0;
	}
	return 1;
}

static int
read_template(const char *uri, void *arg, json_t **contents)
{
	const size_t plen = strlen(TEMPLATE_PREFIX);
	const size_t slen = strlen(TEMPLATE_SUFFIX);
	char id[TEMPLATE_ID_MAX + 1];
	size_t len;
	size_t idlen;
	json_t *data = NULL;
	char *text = NULL;
	int st = STATUS_NOTFOUND;

	(void)arg;
	*contents = NULL;
	if (!uri)
		goto out;
	len = strlen(uri);
	if (len <= plen + slen || strncmp(uri, TEMPLATE_PREFIX, plen) != 0 ||
	    strcmp(uri + len - slen, TEMPLATE_SUFFIX) != 0)
		goto out;
	idlen = len - plen - slen;
	if (idlen > TEMPLATE_ID_MAX || !is_path_segment(uri + plen, idlen))
		goto out;
	memcpy(id, uri + plen, idlen);
	id[idlen] = '\0';

	st = STATUS_NOMEM;
	data = json_pack("{s:s,s:b,s:o}", "id", id, "templateTest", 1, "data",
			 json_sprintf("Data for ID: %s", id));
	if (!data)
		goto out;
	text = json_dumps(data, JSON_COMPACT);
	if (!text)
		goto out;
	*contents = text_contents(uri, "application/json", text);
	if (!*contents)
		goto out;
	st = STATUS_OK;
out:
	free(text);
	json_decref(data);
	return st;
}

static const struct resource_def resources[] = {
	{
		.uri = "test://static-text",
		.name = "static-text",
		.title = "Static Text Resource",
		.description = "A static text resource for testing",
		.mime_type = "text/plain",
		.read = read_static_text,
	},
	{
		.uri = "test://static-binary",
		.name = "static-binary",
		.title = "Static Binary Resource",
		.description = "A static binary resource (a 1x1 PNG image) for "
			       "testing",
		.mime_type = "image/png",
		.read = read_static_binary,
	},
	{
		.uri = "test://watched-resource",
		.name = "watched-resource",
		.title = "Watched Resource",
		.description = "A resource clients can subscribe to for "
			       "testing",
		.mime_type = "text/plain",
		.read = read_watched,
	},
};

static const struct resource_template_def template_def = {
	.uri_template = "test://template/{id}/data",
	.name = "template",
	.title = "Resource Template",
	.description = "A resource template with parameter substitution: "
		       "{id} is echoed in the JSON it returns",
	.mime_type = "application/json",
	.read = read_template,
};

/* Sets *out to the string argument name of args (borrowed). */
static int
string_arg(const json_t *args, const char *name, const char **out, char *err,
	   size_t errlen)
{
	const json_t *v = json_object_get(args, name);

	*out = NULL;
	if (!json_is_string(v)) {
		snprintf(err, errlen,
			 "argument %s is required and must be a "
			 "string",
			 name);
		return STATUS_INVALID;
	}
	if (json_string_length(v) > PROMPT_ARG_MAX) {
		snprintf(err, errlen,
			 "argument %s is too long: at most %d bytes", name,
			 PROMPT_ARG_MAX);
		return STATUS_INVALID;
	}
	*out = json_string_value(v);
	return STATUS_OK;
}

/* A user message with content (stolen; NULL means ENOMEM). */
static json_t *
user_message(json_t *content)
{
	return json_pack("{s:s,s:o}", "role", "user", "content", content);
}

static json_t *
text_content(const char *text)
{
	return json_pack("{s:s,s:s}", "type", "text", "text", text);
}

static int
get_simple(const json_t *args, json_t **result, char *err, size_t errlen)
{
	(void)args;
	(void)err;
	(void)errlen;
	*result = json_pack(
		"{s:[o]}", "messages",
		user_message(text_content("This is a simple prompt for "
					  "testing.")));
	return *result ? STATUS_OK : STATUS_NOMEM;
}

/* 2026-07-28 input_required from prompts/get (SEP-2322). */
static int
get_with_input(const json_t *args, const json_t *input, json_t **result,
	       char *err, size_t errlen)
{
	const json_t *a = json_object_get(input, "user_context");
	const json_t *ctx =
		json_object_get(json_object_get(a, "content"), "context");

	(void)args;
	(void)err;
	(void)errlen;
	if (!json_is_string(json_object_get(a, "action")) ||
	    !json_is_string(ctx)) {
		*result = json_pack(
			"{s:{s:s, s:{s:s, s:{s:s, s:{s:{s:s}}, s:[s]}}}}",
			"user_context", "method", "elicitation/create",
			"params", "message",
			"What context should the prompt use?",
			"requestedSchema", "type", "object", "properties",
			"context", "type", "string", "required", "context");
		return *result ? STATUS_AGAIN : STATUS_NOMEM;
	}
	*result = json_pack("{s:[o]}", "messages",
			    user_message(text_content(json_string_value(ctx))));
	return *result ? STATUS_OK : STATUS_NOMEM;
}

static int
get_with_arguments(const json_t *args, json_t **result, char *err,
		   size_t errlen)
{
	const char *arg1;
	const char *arg2;
	int st;

	*result = NULL;
	st = string_arg(args, "arg1", &arg1, err, errlen);
	if (st == STATUS_OK)
		st = string_arg(args, "arg2", &arg2, err, errlen);
	if (st != STATUS_OK)
		return st;
	*result = json_pack(
		"{s:[o]}", "messages",
		user_message(json_pack(
			"{s:s,s:o}", "type", "text", "text",
			json_sprintf("Prompt with arguments: arg1='%s', "
				     "arg2='%s'",
				     arg1, arg2))));
	return *result ? STATUS_OK : STATUS_NOMEM;
}

static int
get_with_embedded_resource(const json_t *args, json_t **result, char *err,
			   size_t errlen)
{
	const char *uri;
	int st;

	*result = NULL;
	st = string_arg(args, "resourceUri", &uri, err, errlen);
	if (st != STATUS_OK)
		return st;
	if (uri[0] == '\0') {
		snprintf(err, errlen,
			 "argument resourceUri must be a non-empty "
			 "URI, e.g. test://example-resource");
		return STATUS_INVALID;
	}
	*result = json_pack(
		"{s:[o,o]}", "messages",
		user_message(json_pack("{s:s,s:{s:s,s:s,s:s}}", "type",
				       "resource", "resource", "uri", uri,
				       "mimeType", "text/plain", "text",
				       "Embedded resource content for "
				       "testing.")),
		user_message(text_content("Please process the embedded "
					  "resource above.")));
	return *result ? STATUS_OK : STATUS_NOMEM;
}

static int
get_with_image(const json_t *args, json_t **result, char *err, size_t errlen)
{
	(void)args;
	(void)err;
	(void)errlen;
	*result = json_pack(
		"{s:[o,o]}", "messages",
		user_message(json_pack("{s:s,s:s,s:s}", "type", "image", "data",
				       conformance_png_1x1, "mimeType",
				       "image/png")),
		user_message(text_content("Please analyze the image above.")));
	return *result ? STATUS_OK : STATUS_NOMEM;
}

/* Suggestions for test_prompt_with_arguments, per argument. */
static const struct {
	const char *arg;
	const char *value;
} suggestions[] = {
	{"arg1", "testValue1"}, {"arg1", "test"}, {"arg1", "hello"},
	{"arg2", "testValue2"}, {"arg2", "test"}, {"arg2", "world"},
};

_Static_assert(ARRAY_LEN(suggestions) <= COMPLETION_VALUES_MAX,
	       "completion/complete returns at most 100 values");

static int
complete_with_arguments(const char *arg, const char *value, json_t **values)
{
	size_t plen = value ? strlen(value) : 0;
	json_t *v;
	size_t i;

	*values = json_array();
	if (!*values)
		return STATUS_NOMEM;
	for (i = 0; arg && i < ARRAY_LEN(suggestions); i++) {
		if (strcmp(suggestions[i].arg, arg) != 0 ||
		    strncmp(suggestions[i].value, value ? value : "", plen) !=
			    0)
			continue;
		v = json_string(suggestions[i].value);
		if (!v || json_array_append_new(*values, v) != 0) {
			json_decref(*values);
			*values = NULL;
			return STATUS_NOMEM;
		}
	}
	return STATUS_OK;
}

static const struct prompt_arg_def with_arguments_args[] = {
	{"arg1", "First test argument", 1},
	{"arg2", "Second test argument", 1},
	{NULL, NULL, 0},
};

static const struct prompt_arg_def embedded_resource_args[] = {
	{"resourceUri", "URI of the resource to embed", 1},
	{NULL, NULL, 0},
};

static const struct prompt_def prompts[] = {
	{
		.name = "test_simple_prompt",
		.title = "Simple Test Prompt",
		.description = "A simple prompt without arguments",
		.get = get_simple,
	},
	{
		.name = "test_prompt_with_arguments",
		.title = "Prompt With Arguments",
		.description = "A prompt with required arguments arg1 and arg2",
		.args = with_arguments_args,
		.get = get_with_arguments,
		.complete = complete_with_arguments,
	},
	{
		.name = "test_prompt_with_embedded_resource",
		.title = "Prompt With Embedded Resource",
		.description = "A prompt that embeds the resource resourceUri",
		.args = embedded_resource_args,
		.get = get_with_embedded_resource,
	},
	{
		.name = "test_prompt_with_image",
		.title = "Prompt With Image",
		.description = "A prompt that includes image content",
		.get = get_with_image,
	},
	{
		.name = "test_input_required_result_prompt",
		.title = "Prompt Asking For Input",
		.description = "A prompt that asks the user for context first "
			       "(revision 2026-07-28 input_required)",
		.get_input = get_with_input,
	},
};

int
conformance_register_catalog(struct catalog *cat)
{
	size_t i;
	int st;

	for (i = 0; i < ARRAY_LEN(resources); i++) {
		st = catalog_add_resource(cat, &resources[i], NULL);
		if (st != STATUS_OK)
			return st;
	}
	st = catalog_add_template(cat, &template_def, NULL);
	if (st != STATUS_OK)
		return st;
	for (i = 0; i < ARRAY_LEN(prompts); i++) {
		st = catalog_add_prompt(cat, &prompts[i]);
		if (st != STATUS_OK)
			return st;
	}
	return STATUS_OK;
}
