/* rpc.c - JSON-RPC 2.0 framing (see rpc.h). */
#include "mcp/rpc.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/jsondump.h"

static bool
valid_id(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

enum rpc_kind
rpc_classify(const json_t *msg, const char **why, const json_t **id)
{
	const json_t *ver, *method, *idv;
	bool has_result, has_error;

	*why = NULL;
	*id = NULL;
	if (!json_is_object(msg)) {
		*why = "a JSON-RPC message must be an object";
		return RPC_INVALID;
	}
	idv = json_object_get(msg, "id");
	if (idv != NULL && valid_id(idv))
		*id = idv;
	ver = json_object_get(msg, "jsonrpc");
	if (!json_is_string(ver) || strcmp(json_string_value(ver), "2.0")) {
		*why = "\"jsonrpc\" must be \"2.0\"";
		return RPC_INVALID;
	}
	if (idv != NULL && !valid_id(idv)) {
		*why = "\"id\" must be a string or an integer (not null, a "
		       "fraction, an object or an array)";
		return RPC_INVALID;
	}
	method = json_object_get(msg, "method");
	has_result = json_object_get(msg, "result") != NULL;
	has_error = json_object_get(msg, "error") != NULL;
	if (method != NULL) {
		const json_t *params = json_object_get(msg, "params");

		if (!json_is_string(method) ||
		    json_string_length(method) == 0) {
			*why = "\"method\" must be a non-empty string";
			return RPC_INVALID;
		}
		if (has_result || has_error) {
			*why = "a request cannot carry \"result\" or \"error\"";
			return RPC_INVALID;
		}
		if (params != NULL && !json_is_object(params)) {
			*why = "\"params\" must be an object";
			return RPC_INVALID;
		}
		return idv != NULL ? RPC_REQUEST : RPC_NOTIFICATION;
	}
	if (idv == NULL) {
		*why = "a message needs \"method\" (request, notification) or "
		       "\"id\" with \"result\" or \"error\" (response)";
		return RPC_INVALID;
	}
	if (has_result == has_error) {
		*why = "a response carries exactly one of \"result\" and "
		       "\"error\"";
		return RPC_INVALID;
	}
	if (has_error && !json_is_object(json_object_get(msg, "error"))) {
		*why = "\"error\" must be an object";
		return RPC_INVALID;
	}
	return RPC_RESPONSE;
}

json_t *
rpc_result(const json_t *id, json_t *result)
{
	json_t *r;

	if (result == NULL)
		return NULL;
	r = json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
		      result);
	return r;
}

json_t *
rpc_error(const json_t *id, int code, const char *message, json_t *data)
{
	json_t *err = json_pack("{s:i, s:s}", "code", code, "message", message);

	if (err == NULL) {
		json_decref(data);
		return NULL;
	}
	if (data != NULL && json_object_set_new(err, "data", data) != 0) {
		json_decref(err);
		return NULL;
	}
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id",
			 id != NULL ? id : json_null(), "error", err);
}

json_t *
rpc_notification(const char *method, json_t *params)
{
	if (params == NULL)
		return json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method",
				 method);
	return json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", method,
			 "params", params);
}

char *
rpc_result_text(const json_t *id, const char *result_json, size_t result_len,
		size_t *len)
{
	static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
	static const char mid[] = ",\"result\":";
	char *idtext, *out;
	size_t idlen, n;

	idtext = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
	if (idtext == NULL)
		return NULL;
	idlen = strlen(idtext);
	n = sizeof(head) - 1 + idlen + sizeof(mid) - 1 + result_len + 1;
	out = malloc(n + 1);
	if (out != NULL) {
		char *p = out;

		memcpy(p, head, sizeof(head) - 1);
		p += sizeof(head) - 1;
		memcpy(p, idtext, idlen);
		p += idlen;
		memcpy(p, mid, sizeof(mid) - 1);
		p += sizeof(mid) - 1;
		memcpy(p, result_json, result_len);
		p += result_len;
		*p++ = '}';
		*p = '\0';
		*len = n;
	}
	free(idtext);
	return out;
}

void
rpc_id_text(const json_t *id, char *buf, size_t len)
{
	if (json_is_integer(id))
		snprintf(buf, len, "%" JSON_INTEGER_FORMAT,
			 json_integer_value(id));
	else if (json_is_string(id))
		snprintf(buf, len, "\"%.*s\"", (int)(len > 4 ? len - 4 : 0),
			 json_string_value(id));
	else
		snprintf(buf, len, "null");
}

char *
rpc_result_text_with(const json_t *id, json_t *result, const char *key,
		     const char *member, size_t member_len, size_t *len)
{
	json_t *msg = rpc_result(id, result);
	char *text = msg != NULL ? jsondump(msg, JSON_COMPACT) : NULL;
	size_t n = text != NULL ? strlen(text) : 0, klen = strlen(key);
	char *out = NULL, *p;

	json_decref(msg);
	/* text ends with the result's '}' and the message's: the member goes
	 * in before them (rpc_result puts "result" last) */
	if (n >= 3 && text[n - 1] == '}' && text[n - 2] == '}' &&
	    (out = malloc(n + klen + member_len + 5)) != NULL) {
		p = out;
		memcpy(p, text, n - 2);
		p += n - 2;
		if (text[n - 3] != '{')
			*p++ = ',';
		*p++ = '"';
		memcpy(p, key, klen);
		p += klen;
		*p++ = '"';
		*p++ = ':';
		memcpy(p, member, member_len);
		p += member_len;
		memcpy(p, "}}", 3);
		*len = (size_t)(p + 2 - out);
	}
	free(text);
	return out;
}

static const char *const level_names[] = {
	"debug", "info",     "notice", "warning",
	"error", "critical", "alert",  "emergency",
};

int
mcp_level_parse(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *
rpc_batch_shape(const json_t *batch)
{
	size_t n = json_array_size(batch);

	if (n == 0)
		return "invalid request: an empty batch";
	if (n > RPC_BATCH_MAX)
		return "invalid request: a batch holds at most 1000 messages";
	for (size_t i = 0; i < n; i++) {
		const char *m = json_string_value(
			json_object_get(json_array_get(batch, i), "method"));

		if (m != NULL && strcmp(m, "initialize") == 0)
			return "invalid request: initialize cannot be part of "
			       "a batch";
	}
	return NULL;
}

bool
rpc_batch_allowed(const char *version, const char *unit, char *why, size_t len)
{
	if (version != NULL && strcmp(version, "2025-03-26") == 0)
		return true;
	snprintf(why, len,
		 "invalid request: JSON-RPC batches exist only in revision "
		 "2025-03-26%s%s: send one message per %s",
		 version != NULL ? "; this session uses " : "",
		 version != NULL ? version : "", unit);
	return false;
}
