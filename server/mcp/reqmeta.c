/*
 * reqmeta.c - the per-request _meta fields of MCP 2026-07-28; see
 * reqmeta.h.
 */
#include "mcp/reqmeta.h"

#include <stdio.h>
#include <string.h>

#include "mcp/rpc.h"

const char *const reqmeta_versions[] = {REQMETA_VERSION, NULL};

bool
reqmeta_version_supported(const char *version)
{
	for (size_t i = 0; version != NULL && reqmeta_versions[i] != NULL; i++)
		if (strcmp(reqmeta_versions[i], version) == 0)
			return true;
	return false;
}

static const json_t *
meta_of(const json_t *msg)
{
	const json_t *params = json_object_get(msg, "params");

	return json_is_object(params) ? json_object_get(params, "_meta") : NULL;
}

bool
reqmeta_has_claim(const json_t *msg)
{
	const json_t *meta = meta_of(msg);

	return json_is_object(meta) &&
	       json_object_get(meta, REQMETA_KEY_VERSION) != NULL;
}

int
reqmeta_parse(const json_t *msg, struct reqmeta *out, char *why, size_t len)
{
	const json_t *meta = meta_of(msg), *v;

	memset(out, 0, sizeof(*out));
	out->log_level = MCP_LEVEL_OFF;
	if (!json_is_object(meta)) {
		snprintf(why, len,
			 "params._meta is required on every request of "
			 "revision %s, with \"%s\" and \"%s\"",
			 REQMETA_VERSION, REQMETA_KEY_VERSION,
			 REQMETA_KEY_CAPS);
		return STATUS_INVALID;
	}
	v = json_object_get(meta, REQMETA_KEY_VERSION);
	if (!json_is_string(v)) {
		snprintf(why, len,
			 "params._meta[\"%s\"] is required: a string such as "
			 "\"%s\"",
			 REQMETA_KEY_VERSION, REQMETA_VERSION);
		return STATUS_INVALID;
	}
	out->version = json_string_value(v);
	out->caps = json_object_get(meta, REQMETA_KEY_CAPS);
	if (!json_is_object(out->caps)) {
		snprintf(why, len,
			 "params._meta[\"%s\"] is required: an object of the "
			 "client's capabilities ({} for none)",
			 REQMETA_KEY_CAPS);
		return STATUS_INVALID;
	}
	out->client_info = json_object_get(meta, REQMETA_KEY_INFO);
	if (out->client_info != NULL && !json_is_object(out->client_info)) {
		snprintf(why, len,
			 "params._meta[\"%s\"] must be an object with name "
			 "and version",
			 REQMETA_KEY_INFO);
		return STATUS_INVALID;
	}
	v = json_object_get(meta, REQMETA_KEY_LEVEL);
	if (v != NULL) {
		int lv = json_is_string(v)
				 ? mcp_level_parse(json_string_value(v))
				 : -1;

		if (lv < 0) {
			snprintf(why, len,
				 "params._meta[\"%s\"] must be one of debug, "
				 "info, notice, warning, error, critical, "
				 "alert, emergency",
				 REQMETA_KEY_LEVEL);
			return STATUS_INVALID;
		}
		out->log_level = lv;
	}
	return STATUS_OK;
}

bool
reqmeta_has_capability(const json_t *caps, const char *path)
{
	const char *slash = strchr(path, '/');
	const json_t *v;

	if (slash == NULL)
		return json_is_object(json_object_get(caps, path));
	v = json_object_getn(caps, path, (size_t)(slash - path));
	return json_is_object(v) &&
	       json_is_object(json_object_get(v, slash + 1));
}
