/*
 * params.c - query parameters onto tool arguments (see params.h).
 */
#include "rest/params.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jsonload.h"

const char *
rest_param_type(const json_t *schema)
{
	const json_t *t = json_object_get(schema, "type");
	const json_t *e;
	size_t i;

	if (json_is_string(t))
		return json_string_value(t);
	json_array_foreach(t, i, e)
	{
		if (json_is_string(e) &&
		    strcmp(json_string_value(e), "null") != 0)
			return json_string_value(e);
	}
	e = json_array_get(json_object_get(schema, "enum"), 0);
	if (json_is_integer(e))
		return "integer";
	if (json_is_number(e))
		return "number";
	if (json_is_boolean(e))
		return "boolean";
	return "string";
}

static int
refuse(struct rest_param_error *err, const char *key, const char *expected,
       const char *given, const char *why)
{
	snprintf(err->field, sizeof(err->field), "%s", key);
	snprintf(err->expected, sizeof(err->expected), "%s", expected);
	snprintf(err->given, sizeof(err->given), "%.*s",
		 (int)sizeof(err->given) - 1, given != NULL ? given : "");
	snprintf(err->message, sizeof(err->message), "%s: %s", key, why);
	return STATUS_INVALID;
}

/* One value of type (not an array) from text: NULL when it does not
 * convert (or no memory: *nomem). */
static json_t *
convert(const char *type, const char *text, bool *nomem)
{
	json_t *v = NULL;
	char *end;

	errno = 0;
	if (strcmp(type, "integer") == 0) {
		long long n = strtoll(text, &end, 10);

		if (*text != '\0' && *end == '\0' && errno == 0)
			v = json_integer(n);
		else
			return NULL;
	} else if (strcmp(type, "number") == 0) {
		double d = strtod(text, &end);

		if (*text != '\0' && *end == '\0' && errno == 0 && isfinite(d))
			v = json_real(d);
		else
			return NULL;
	} else if (strcmp(type, "boolean") == 0) {
		if (strcmp(text, "true") == 0 || strcmp(text, "1") == 0)
			v = json_true();
		else if (strcmp(text, "false") == 0 || strcmp(text, "0") == 0)
			v = json_false();
		else
			return NULL;
	} else if (strcmp(type, "object") == 0) {
		json_error_t jerr;

		v = jsonload(text, strlen(text), &jerr);
		if (!json_is_object(v)) {
			json_decref(v);
			return NULL;
		}
	} else {
		v = json_string(text);
		if (v == NULL) /* not UTF-8 */
			return NULL;
	}
	if (v == NULL)
		*nomem = true;
	return v;
}

static const char *
expected_of(const char *type)
{
	if (strcmp(type, "integer") == 0)
		return "an integer";
	if (strcmp(type, "number") == 0)
		return "a number";
	if (strcmp(type, "boolean") == 0)
		return "true or false";
	if (strcmp(type, "object") == 0)
		return "a JSON object";
	return "a UTF-8 string";
}

/* Appends each comma-separated item of value to the array at key. */
static int
add_items(json_t *args, const char *key, const json_t *schema,
	  const char *value, struct rest_param_error *err)
{
	const char *type = rest_param_type(json_object_get(schema, "items"));
	json_t *arr = json_object_get(args, key);
	char item[REST_PARAM_MAX + 1];
	const char *p = value;
	bool nomem = false;

	if (!json_is_array(arr)) {
		arr = json_array();
		if (arr == NULL || json_object_set_new(args, key, arr) != 0)
			return STATUS_NOMEM;
	}
	for (;;) {
		size_t n = strcspn(p, ",");
		json_t *v;

		memcpy(item, p, n);
		item[n] = '\0';
		if (n > 0) {
			v = convert(type, item, &nomem);
			if (v == NULL) {
				char why[200];

				if (nomem)
					return STATUS_NOMEM;
				snprintf(why, sizeof(why),
					 "expected a list of %s (repeat the "
					 "parameter or separate items with "
					 "commas), got \"%.40s\"",
					 expected_of(type), item);
				return refuse(err, key, expected_of(type), item,
					      why);
			}
			if (json_array_append_new(arr, v) != 0)
				return STATUS_NOMEM;
		}
		if (p[n] == '\0')
			return STATUS_OK;
		p += n + 1;
	}
}

int
rest_param_add(const json_t *props, json_t *args, const char *key,
	       const char *value, struct rest_param_error *err)
{
	const json_t *schema = json_object_get(props, key);
	const char *type;
	bool nomem = false;
	json_t *v;
	char why[256];

	if (schema == NULL) {
		snprintf(err->field, sizeof(err->field), "%s", key);
		snprintf(err->expected, sizeof(err->expected),
			 "one of the accepted parameters");
		snprintf(err->given, sizeof(err->given), "%s", key);
		snprintf(err->message, sizeof(err->message),
			 "unknown query parameter \"%.60s\"", key);
		return STATUS_NOTFOUND;
	}
	type = rest_param_type(schema);
	if (value == NULL)
		value = strcmp(type, "boolean") == 0 ? "true" : "";
	if (strlen(value) > REST_PARAM_MAX) {
		snprintf(why, sizeof(why), "longer than %d bytes",
			 REST_PARAM_MAX);
		return refuse(err, key, "a shorter value", "", why);
	}
	if (strcmp(type, "array") == 0)
		return add_items(args, key, schema, value, err);
	if (json_object_get(args, key) != NULL)
		return refuse(err, key, "one value", value,
			      "given more than once; this parameter takes "
			      "one value");
	v = convert(type, value, &nomem);
	if (v == NULL) {
		if (nomem)
			return STATUS_NOMEM;
		snprintf(why, sizeof(why), "expected %s, got \"%.60s\"",
			 expected_of(type), value);
		return refuse(err, key, expected_of(type), value, why);
	}
	return json_object_set_new(args, key, v) == 0 ? STATUS_OK
						      : STATUS_NOMEM;
}

/* "lookbackSeconds" as "lookback_seconds" into out (cap bytes); false when
 * it does not fit or has no capital letter. */
static bool
snake_of(const char *camel, char *out, size_t cap)
{
	size_t n = 0;
	bool upper = false;

	for (const char *c = camel; *c != '\0'; c++) {
		bool up = *c >= 'A' && *c <= 'Z';

		if (n + 3 > cap)
			return false;
		if (up && c != camel)
			out[n++] = '_';
		out[n++] = up ? (char)(*c - 'A' + 'a') : *c;
		upper |= up;
	}
	out[n] = '\0';
	return upper;
}

int
rest_snake_args(const json_t *props, json_t *args)
{
	const char *key;
	json_t *v;
	void *tmp;
	char snake[128];

	json_object_foreach_safe(args, tmp, key, v)
	{
		if (json_object_get(props, key) != NULL ||
		    !snake_of(key, snake, sizeof(snake)) ||
		    json_object_get(props, snake) == NULL ||
		    json_object_get(args, snake) != NULL)
			continue;
		if (json_object_set(args, snake, v) != 0)
			return STATUS_NOMEM;
		json_object_del(args, key);
	}
	return STATUS_OK;
}
