/*
 * prm.c - Protected Resource Metadata and Bearer challenges (see prm.h).
 */
#include "oauth/prm.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"

#define PRM_WELL_KNOWN "/.well-known/oauth-protected-resource"

static json_t *
str_array(const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a != NULL && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) != 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

json_t *
prm_document(const struct prm_info *i)
{
	json_t *d = json_object();

	if (d == NULL)
		return NULL;
	if (json_object_set_new(d, "resource", json_string(i->resource)) != 0 ||
	    json_object_set_new(
		    d, "authorization_servers",
		    str_array(i->auth_servers, i->n_auth_servers)) != 0 ||
	    json_object_set_new(d, "scopes_supported",
				str_array(i->scopes, i->n_scopes)) != 0 ||
	    json_object_set_new(d, "bearer_methods_supported",
				json_pack("[s]", "header")) != 0 ||
	    (i->resource_documentation != NULL &&
	     i->resource_documentation[0] != '\0' &&
	     json_object_set_new(d, "resource_documentation",
				 json_string(i->resource_documentation)) !=
		     0)) {
		json_decref(d);
		return NULL;
	}
	return d;
}

int
prm_url(const char *resource, char *out, size_t cap)
{
	const char *host, *path;
	int n;

	if (cap > 0)
		out[0] = '\0';
	if (strncasecmp(resource, "https://", 8) != 0 &&
	    strncasecmp(resource, "http://", 7) != 0)
		return STATUS_INVALID;
	host = strstr(resource, "://") + 3;
	path = host + strcspn(host, "/?#");
	if (path == host || (*path != '\0' && *path != '/'))
		return STATUS_INVALID;
	/* "https://h/" has no path: the root form */
	n = snprintf(out, cap, "%.*s%s%s", (int)(path - resource), resource,
		     PRM_WELL_KNOWN, strcmp(path, "/") == 0 ? "" : path);
	if (n < 0 || (size_t)n >= cap) {
		if (cap > 0)
			out[0] = '\0';
		return STATUS_LIMIT;
	}
	return STATUS_OK;
}

/* RFC 6750 3: error_description uses %x20-21 / %x23-5B / %x5D-7E. */
static void
put_description(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		buf_append(b,
			   c < 0x20 || c > 0x7e || c == '"' || c == '\\' ? "?"
									 : s,
			   1);
	}
}

int
prm_challenge(char *out, size_t cap, const char *metadata_url,
	      const char *scope, const char *error, const char *description)
{
	struct buf b;
	int rc;

	buf_init(&b, cap > 0 ? cap - 1 : 0);
	buf_printf(&b, "Bearer resource_metadata=\"%s\"", metadata_url);
	if (scope != NULL && scope[0] != '\0')
		buf_printf(&b, ", scope=\"%s\"", scope);
	if (error != NULL) {
		buf_printf(&b, ", error=\"%s\"", error);
		if (description != NULL && description[0] != '\0') {
			buf_puts(&b, ", error_description=\"");
			put_description(&b, description);
			buf_puts(&b, "\"");
		}
	}
	if ((rc = buf_error(&b)) == STATUS_OK)
		memcpy(out, b.data, b.len + 1);
	else if (cap > 0)
		out[0] = '\0';
	buf_free(&b);
	return rc;
}
