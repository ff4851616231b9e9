/*
 * kube.h - a small client of the Kubernetes API for custom resources (Istio
 * and Gateway API objects): the paths of /apis/{group}/{version}/..., one
 * request with a bearer token and a CA over libcurl, the API's Status
 * answers as errors a person can act on, and the JSON merge patch (RFC
 * 7386) with the changes it makes, for previews.  It knows nothing of MCP;
 * server/tools/tool_mesh_istio.c turns its answers into tool results.
 *
 * Thread-safety: every function may be called from any thread at once.
 * Nothing is kept between calls: the token file is read for each request
 * (service-account tokens are rotated), and each request has its own curl
 * handle.
 */
#ifndef SEXTANT_KUBE_H
#define SEXTANT_KUBE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/status.h"

/* A pod's service account, the default credentials in a cluster. */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* Largest answer read: a list of a few thousand Istio objects. */
#define KUBE_MAX_RESPONSE_BYTES (16 * 1024 * 1024)
/* A token file larger than this is refused (service-account JWTs are
 * about 1 KiB). */
#define KUBE_MAX_TOKEN_BYTES 16384
/* A path (and query) of the API; names are at most 253 bytes each. */
#define KUBE_PATH_MAX 1400
/* The API server's base URL. */
#define KUBE_URL_MAX 512

/*
 * Where the API server is ([kubernetes] in the configuration).  Strings are
 * borrowed for the call; NULL and "" mean unset: api_url unset is
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT with the
 * service account's token and ca.crt (KUBE_SA_DIR); token_file unset is
 * the service account's token when that file exists (else no token);
 * ca_file unset is the service account's ca.crt in a pod, else the
 * system's store.
 */
struct kube_config {
	const char *api_url;
	const char *token_file;
	const char *ca_file;
	int timeout_ms; /* one request, connect included */
};

/*
 * One resource or collection: group "" is the core API (/api/v1).
 * namespace NULL or "" lists across namespaces; name NULL or "" is the
 * collection.  kind is the Kind ("VirtualService") or the plural
 * ("virtualservices").  label_selector: for lists, NULL = none.
 */
struct kube_ref {
	const char *group;
	const char *version;
	const char *kind;
	const char *namespace;
	const char *name;
	const char *label_selector;
};

/*
 * The plural resource name of a kind, as the API names it: lowercase,
 * then "ies" for a consonant and "y" (AuthorizationPolicy ->
 * authorizationpolicies), "es" after s, x, z, ch and sh (GatewayClass ->
 * gatewayclasses), else "s" (VirtualService -> virtualservices); a name
 * already plural and lowercase ("virtualservices") is kept.  STATUS_INVALID
 * for an empty kind or one with other than letters and digits,
 * STATUS_LIMIT when out[len] is too small.
 */
int kube_plural(const char *kind, char *out, size_t len) WUR;

/*
 * The path of r: /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}]
 * [?labelSelector=...], percent-encoded, into out[len].  Checks each part
 * (group a DNS subdomain, version such as v1 or v1beta1, namespace a DNS
 * label, name a DNS subdomain) so that no part can climb out of its
 * place; on STATUS_INVALID err names the part and what it takes.
 * STATUS_LIMIT when out[len] is too small.
 */
int kube_path(const struct kube_ref *r, char *out, size_t len, char *err,
	      size_t errlen) WUR;

/* What went wrong, by what the caller should tell the user. */
enum kube_fail {
	KUBE_FAIL_NONE,
	KUBE_FAIL_CONFIG,	/* no API server or token: configure one */
	KUBE_FAIL_UNAVAILABLE,	/* no answer: connection, TLS, timeout, 5xx */
	KUBE_FAIL_REFUSED,	/* 401 / 403: the token or its rights */
	KUBE_FAIL_NOT_FOUND,	/* 404 */
	KUBE_FAIL_CONFLICT,	/* 409: exists already, or changed since */
	KUBE_FAIL_INVALID,	/* 400 / 422: the object was refused */
	KUBE_FAIL_BAD_RESPONSE, /* another status, not JSON, over the cap */
	KUBE_FAIL_CANCELLED,	/* cancelled() became true */
};

/*
 * Two messages per error: client is safe to show (the API's Status
 * message, which names the object and the field, never the token),
 * detail is for the log (curl's error text).
 */
struct kube_error {
	enum kube_fail kind;
	long http_status; /* 0 when no HTTP answer came */
	char client[768];
	char detail[512];
};

/* Per-request options, borrowed for the call. */
struct kube_opts {
	bool (*cancelled)(void *arg); /* polled during the transfer; NULL */
	void *arg;
	const char *content_type; /* of body; NULL = application/json */
};

/*
 * Sends method ("GET", "POST", "PATCH", "DELETE") path (from kube_path)
 * with body (borrowed, may be NULL) to the API server of cfg, and on a 2xx
 * answer sets *out to its JSON (caller decrefs).  Any other outcome is a
 * status with err filled: STATUS_INVALID for KUBE_FAIL_CONFIG, STATUS_IO
 * for the others, STATUS_CANCELLED, STATUS_NOMEM; *out stays NULL.
 */
int kube_request(const struct kube_config *cfg, const char *method,
		 const char *path, const json_t *body,
		 const struct kube_opts *opts, json_t **out,
		 struct kube_error *err) WUR;

/*
 * RFC 7386 JSON merge patch: target (borrowed, may be NULL) with patch
 * (borrowed) applied, as a new value (NULL when out of memory): an object
 * patch merges member by member, null removes a member, anything else
 * (arrays included) replaces the whole value.
 */
json_t *kube_merge_patch(const json_t *target, const json_t *patch);

/*
 * The changes from before to after (borrowed) as a new array of
 * {"path": JSON pointer (RFC 6901), "op": "add" | "remove" | "replace",
 * "from": old value (not for add), "to": new value (not for remove)},
 * members in key order, descending into objects only (an array that
 * differs is one replace, as a merge patch replaces it).  [] when equal;
 * NULL when out of memory.
 */
json_t *kube_diff(const json_t *before, const json_t *after);

#endif
