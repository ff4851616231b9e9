/*
 * kube.c - the Kubernetes API client of kube.h: checked paths, one request
 * per call over libcurl (bearer token, CA, size cap, cancellation), the
 * API's Status as an error, and the merge patch with its changes.
 */
#include "kube/kube.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/curlx.h"

#ifndef SEXTANT_VERSION
#define SEXTANT_VERSION "dev"
#endif

/* ---- paths ------------------------------------------------------------- */

int
kube_plural(const char *kind, char *out, size_t len)
{
	size_t n = kind != NULL ? strlen(kind) : 0;
	bool lower = true;
	const char *suffix = "s";

	if (n == 0 || n > 63)
		return STATUS_INVALID;
	for (size_t i = 0; i < n; i++) {
		if (!isalnum((unsigned char)kind[i]))
			return STATUS_INVALID;
		if (isupper((unsigned char)kind[i]))
			lower = false;
	}
	if (n + 3 > len)
		return STATUS_LIMIT;
	for (size_t i = 0; i < n; i++)
		out[i] = (char)tolower((unsigned char)kind[i]);
	out[n] = '\0';
	/* a lowercase name ending in s is taken as the plural already */
	if (lower && out[n - 1] == 's')
		return STATUS_OK;
	if (out[n - 1] == 'y' && n > 1 && strchr("aeiou", out[n - 2]) == NULL) {
		out[n - 1] = '\0';
		suffix = "ies";
	} else if (strchr("sxz", out[n - 1]) != NULL ||
		   (n > 1 && out[n - 1] == 'h' && strchr("cs", out[n - 2]))) {
		suffix = "es";
	}
	if (strlen(out) + strlen(suffix) + 1 > len)
		return STATUS_LIMIT;
	strncat(out, suffix, len - strlen(out) - 1);
	return STATUS_OK;
}

/* A DNS label (RFC 1123): 1-63 of [a-z0-9-], alphanumeric at both ends;
 * with dots, a subdomain of such labels, at most 253. */
static bool
dns_name(const char *s, bool dots, size_t max)
{
	size_t n = strlen(s), label = 0;

	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		bool end = i + 1 == n || (dots && s[i + 1] == '.');
		if (dots && c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
		      c == '-'))
			return false;
		if (c == '-' && (label == 0 || end))
			return false;
		if (++label > 63)
			return false;
	}
	return label > 0;
}

/* v1, v1beta1, v1alpha3, v2: what CRD versions look like. */
static bool
api_version(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n > 20 || s[0] != 'v' || !isdigit((unsigned char)s[1]))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!islower((unsigned char)s[i]) &&
		    !isdigit((unsigned char)s[i]))
			return false;
	return true;
}

static bool
unreserved(unsigned char c)
{
	return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

int
kube_path(const struct kube_ref *r, char *out, size_t len, char *err,
	  size_t errlen)
{
	char plural[72];
	const char *group = r->group != NULL ? r->group : "";
	const char *ns = r->namespace != NULL ? r->namespace : "";
	const char *name = r->name != NULL ? r->name : "";
	struct buf b;
	int rc;

	err[0] = '\0';
	if (group[0] != '\0' && !dns_name(group, true, 253)) {
		snprintf(err, errlen,
			 "group \"%.64s\": expected an API group such as "
			 "networking.istio.io (lowercase, dots)",
			 group);
		return STATUS_INVALID;
	}
	if (r->version == NULL || !api_version(r->version)) {
		snprintf(err, errlen,
			 "version \"%.32s\": expected an API version such as "
			 "v1 or v1beta1",
			 r->version != NULL ? r->version : "");
		return STATUS_INVALID;
	}
	rc = kube_plural(r->kind, plural, sizeof(plural));
	if (rc != STATUS_OK) {
		snprintf(err, errlen,
			 "kind \"%.64s\": expected a kind such as "
			 "VirtualService (letters and digits)",
			 r->kind != NULL ? r->kind : "");
		return STATUS_INVALID;
	}
	if (ns[0] != '\0' && !dns_name(ns, false, 63)) {
		snprintf(err, errlen,
			 "namespace \"%.64s\": expected a namespace name "
			 "(lowercase letters, digits and '-', at most 63)",
			 ns);
		return STATUS_INVALID;
	}
	if (name[0] != '\0' && !dns_name(name, true, 253)) {
		snprintf(err, errlen,
			 "object \"%.64s\": expected an object name "
			 "(lowercase letters, digits, '-' and '.')",
			 name);
		return STATUS_INVALID;
	}
	buf_init(&b, len);
	if (group[0] != '\0')
		buf_printf(&b, "/apis/%s/%s", group, r->version);
	else
		buf_printf(&b, "/api/%s", r->version);
	if (ns[0] != '\0')
		buf_printf(&b, "/namespaces/%s", ns);
	buf_printf(&b, "/%s", plural);
	if (name[0] != '\0')
		buf_printf(&b, "/%s", name);
	if (name[0] == '\0' && r->label_selector != NULL &&
	    r->label_selector[0] != '\0') {
		buf_puts(&b, "?labelSelector=");
		for (const unsigned char *p =
			     (const unsigned char *)r->label_selector;
		     *p != '\0'; p++) {
			if (unreserved(*p))
				buf_append(&b, p, 1);
			else
				buf_printf(&b, "%%%02X", *p);
		}
	}
	rc = buf_error(&b);
	if (rc == STATUS_OK && b.len + 1 > len)
		rc = STATUS_LIMIT;
	if (rc == STATUS_OK) {
		memcpy(out, b.data, b.len);
		out[b.len] = '\0';
	} else {
		snprintf(err, errlen,
			 "the path is too long (at most %zu bytes)", len - 1);
	}
	buf_free(&b);
	return rc;
}

/* ---- requests ------------------------------------------------------------ */

PRINTF_LIKE(3, 4)
static int
fail(struct kube_error *err, enum kube_fail kind, const char *fmt, ...)
{
	va_list ap;

	err->kind = kind;
	va_start(ap, fmt);
	vsnprintf(err->client, sizeof(err->client), fmt, ap);
	va_end(ap);
	switch (kind) {
	case KUBE_FAIL_CONFIG: return STATUS_INVALID;
	case KUBE_FAIL_CANCELLED: return STATUS_CANCELLED;
	default: return STATUS_IO;
	}
}

/* The token of path into tok[len] (trailing white space cut); "" for an
 * unset default that does not exist. */
static int
read_token(const char *path, bool must, char *tok, size_t len,
	   struct kube_error *err)
{
	FILE *f = fopen(path, "r");
	size_t n;

	tok[0] = '\0';
	if (f == NULL) {
		if (!must && errno == ENOENT)
			return STATUS_OK;
		snprintf(err->detail, sizeof(err->detail), "%s: %s", path,
			 strerror(errno));
		return fail(err, KUBE_FAIL_CONFIG,
			    "cannot read kubernetes.token_file %s: check the "
			    "path and its permissions",
			    path);
	}
	n = fread(tok, 1, len - 1, f);
	if (n == len - 1 && fgetc(f) != EOF) {
		fclose(f);
		return fail(
			err, KUBE_FAIL_CONFIG,
			"kubernetes.token_file %s is larger than %zu bytes: "
			"expected one bearer token",
			path, len - 1);
	}
	fclose(f);
	while (n > 0 && isspace((unsigned char)tok[n - 1]))
		n--;
	tok[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isgraph((unsigned char)tok[i]))
			return fail(err, KUBE_FAIL_CONFIG,
				    "kubernetes.token_file %s holds more than "
				    "one token: expected one line",
				    path);
	return STATUS_OK;
}

/* The answer, into a struct buf with its cap: past it the append fails
 * (buf_error says STATUS_LIMIT) and so does the transfer. */
static size_t
on_write(char *p, size_t size, size_t n, void *body)
{
	return buf_append(body, p, size * n) == STATUS_OK ? size * n : 0;
}

static int
on_progress(void *opts, curl_off_t dltotal, curl_off_t dlnow,
	    curl_off_t ultotal, curl_off_t ulnow)
{
	const struct kube_opts *o = opts;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return o->cancelled != NULL && o->cancelled(o->arg);
}

/* An error answer: the API's Status message when it sent one. */
static int
status_failure(long http, const struct buf *body, struct kube_error *err)
{
	json_t *st = json_loadb(body->data != NULL ? body->data : "", body->len,
				0, NULL);
	const char *msg = json_string_value(json_object_get(st, "message"));
	char m[600];
	enum kube_fail kind;
	int rc;

	snprintf(m, sizeof(m), "%s", msg != NULL ? msg : "");
	json_decref(st);
	snprintf(err->detail, sizeof(err->detail), "HTTP %ld: %.400s", http, m);
	err->http_status = http;
	switch (http) {
	case 401:
	case 403: kind = KUBE_FAIL_REFUSED; break;
	case 404: kind = KUBE_FAIL_NOT_FOUND; break;
	case 409: kind = KUBE_FAIL_CONFLICT; break;
	case 400:
	case 422: kind = KUBE_FAIL_INVALID; break;
	default:
		kind = http >= 500 ? KUBE_FAIL_UNAVAILABLE
				   : KUBE_FAIL_BAD_RESPONSE;
	}
	if (m[0] != '\0')
		rc = fail(err, kind, "%s", m);
	else
		rc = fail(err, kind, "the Kubernetes API answered HTTP %ld",
			  http);
	return rc;
}

int
kube_request(const struct kube_config *cfg, const char *method,
	     const char *path, const json_t *body, const struct kube_opts *opts,
	     json_t **out, struct kube_error *err)
{
	char url[KUBE_URL_MAX + KUBE_PATH_MAX], tok[KUBE_MAX_TOKEN_BYTES + 1];
	char auth[KUBE_MAX_TOKEN_BYTES + 32], ctype[96];
	char curl_err[CURL_ERROR_SIZE] = "";
	const char *base = cfg->api_url, *ca = cfg->ca_file;
	const char *token_file = cfg->token_file;
	bool in_cluster = false;
	static const struct kube_opts no_opts;
	struct buf body_in;
	struct curl_slist *hdrs = NULL, *t;
	char *payload = NULL;
	CURL *h = NULL;
	CURLcode cc;
	long http = 0;
	int rc;

	*out = NULL;
	memset(err, 0, sizeof(*err));
	buf_init(&body_in, KUBE_MAX_RESPONSE_BYTES);
	if (base == NULL || base[0] == '\0') {
		const char *host = getenv("KUBERNETES_SERVICE_HOST");
		const char *port = getenv("KUBERNETES_SERVICE_PORT");
		if (host == NULL || host[0] == '\0') {
			rc = fail(err, KUBE_FAIL_CONFIG,
				  "no Kubernetes API configured: set "
				  "[kubernetes] api_url, or run the gateway in "
				  "a pod (KUBERNETES_SERVICE_HOST)");
			goto out;
		}
		snprintf(url, KUBE_URL_MAX,
			 strchr(host, ':') != NULL ? "https://[%s]:%s"
						   : "https://%s:%s",
			 host, port != NULL && port[0] != '\0' ? port : "443");
		in_cluster = true;
	} else {
		snprintf(url, KUBE_URL_MAX, "%s", base);
	}
	/* no trailing slash before the path */
	for (size_t n = strlen(url); n > 0 && url[n - 1] == '/'; n--)
		url[n - 1] = '\0';
	if (strlen(url) + strlen(path) + 1 > sizeof(url)) {
		rc = fail(err, KUBE_FAIL_CONFIG, "the API path is too long");
		goto out;
	}
	strncat(url, path, sizeof(url) - strlen(url) - 1);
	/* a CA of its own, else the service account's in a pod, else the
	 * system's store */
	if (ca == NULL || ca[0] == '\0')
		ca = in_cluster ? KUBE_SA_DIR "/ca.crt" : NULL;
	rc = read_token(token_file != NULL && token_file[0] != '\0'
				? token_file
				: KUBE_SA_DIR "/token",
			token_file != NULL && token_file[0] != '\0', tok,
			sizeof(tok), err);
	if (rc != STATUS_OK)
		goto out;

	/* curl_easy_init runs curl_global_init when nothing did: thread-safe
	 * since libcurl 7.84 (CURL_VERSION_THREADSAFE; bookworm has 7.88) */
	if ((h = curl_easy_init()) == NULL) {
		rc = STATUS_NOMEM;
		goto out;
	}
	t = curl_slist_append(hdrs, "Accept: application/json");
	if (t != NULL)
		hdrs = t;
	if (tok[0] != '\0') {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", tok);
		t = curl_slist_append(hdrs, auth);
		if (t != NULL)
			hdrs = t;
		explicit_bzero(auth, sizeof(auth));
	}
	if (body != NULL) {
		snprintf(ctype, sizeof(ctype), "Content-Type: %s",
			 opts != NULL && opts->content_type != NULL
				 ? opts->content_type
				 : "application/json");
		t = curl_slist_append(hdrs, ctype);
		if (t != NULL)
			hdrs = t;
		payload = json_dumps(body, JSON_COMPACT);
		if (payload == NULL) {
			rc = STATUS_NOMEM;
			goto out;
		}
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, payload);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curlx_secure(h, ca);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
			 (long)(cfg->timeout_ms > 0 ? cfg->timeout_ms : 10000));
	curl_easy_setopt(h, CURLOPT_USERAGENT, "sextant/" SEXTANT_VERSION);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body_in);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA,
			 opts != NULL ? opts : &no_opts);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
	cc = curl_easy_perform(h);
	explicit_bzero(tok, sizeof(tok));
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
	if (cc == CURLE_ABORTED_BY_CALLBACK) {
		rc = fail(err, KUBE_FAIL_CANCELLED, "cancelled");
		goto out;
	}
	if (cc == CURLE_WRITE_ERROR && buf_error(&body_in) == STATUS_LIMIT) {
		rc = fail(err, KUBE_FAIL_BAD_RESPONSE,
			  "the Kubernetes API's answer is larger than %d MiB: "
			  "narrow the list with namespace or label_selector",
			  KUBE_MAX_RESPONSE_BYTES / (1024 * 1024));
		goto out;
	}
	if (cc != CURLE_OK) {
		snprintf(err->detail, sizeof(err->detail), "%.200s: %.250s",
			 url,
			 curl_err[0] != '\0' ? curl_err
					     : curl_easy_strerror(cc));
		rc = fail(err, KUBE_FAIL_UNAVAILABLE,
			  "the Kubernetes API at %.200s did not answer (%s): "
			  "check [kubernetes] api_url and ca_file",
			  base != NULL && base[0] != '\0' ? base : "in-cluster",
			  curl_easy_strerror(cc));
		goto out;
	}
	if (http < 200 || http > 299) {
		rc = status_failure(http, &body_in, err);
		goto out;
	}
	err->http_status = http;
	*out = json_loadb(body_in.data != NULL ? body_in.data : "", body_in.len,
			  0, NULL);
	if (*out == NULL) {
		rc = fail(err, KUBE_FAIL_BAD_RESPONSE,
			  "the Kubernetes API answered HTTP %ld without JSON",
			  http);
		goto out;
	}
	rc = STATUS_OK;
out:
	explicit_bzero(tok, sizeof(tok));
	if (h != NULL)
		curl_easy_cleanup(h);
	curl_slist_free_all(hdrs);
	free(payload);
	buf_free(&body_in);
	return rc;
}

/* ---- merge patch ----------------------------------------------------------- */

json_t *
kube_merge_patch(const json_t *target, const json_t *patch)
{
	json_t *res;
	const char *k;
	json_t *v;

	if (!json_is_object(patch))
		return json_deep_copy(patch);
	res = json_is_object(target) ? json_deep_copy(target) : json_object();
	if (res == NULL)
		return NULL;
	json_object_foreach((json_t *)patch, k, v)
	{
		if (json_is_null(v)) {
			json_object_del(res, k);
			continue;
		}
		if (json_object_set_new(
			    res, k,
			    kube_merge_patch(json_object_get(res, k), v)) !=
		    0) {
			json_decref(res);
			return NULL;
		}
	}
	return res;
}

/* RFC 6901: "~" as "~0", "/" as "~1". */
static int
pointer_add(struct buf *b, const char *key)
{
	buf_append(b, "/", 1);
	for (const char *p = key; *p != '\0'; p++) {
		if (*p == '~')
			buf_puts(b, "~0");
		else if (*p == '/')
			buf_puts(b, "~1");
		else
			buf_append(b, p, 1);
	}
	return buf_error(b);
}

static int
change(json_t *out, const char *path, const char *op, const json_t *from,
       const json_t *to)
{
	json_t *c =
		json_pack("{s:s, s:s}", "path", path[0] ? path : "", "op", op);

	if (c == NULL)
		return STATUS_NOMEM;
	if (from != NULL)
		json_object_set(c, "from", (json_t *)from);
	if (to != NULL)
		json_object_set(c, "to", (json_t *)to);
	return json_array_append_new(out, c) == 0 ? STATUS_OK : STATUS_NOMEM;
}

static int
cmp_key(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The keys of a and b together, sorted, each once; caller frees. */
static const char **
keys_of(const json_t *a, const json_t *b, size_t *n)
{
	size_t max = json_object_size(a) + json_object_size(b), k = 0;
	const char **v = calloc(max + 1, sizeof(*v));
	const char *key;
	json_t *x;

	if (v == NULL)
		return NULL;
	json_object_foreach((json_t *)a, key, x) v[k++] = key;
	json_object_foreach((json_t *)b, key, x) if (json_object_get(a, key) ==
						     NULL) v[k++] = key;
	qsort(v, k, sizeof(*v), cmp_key);
	*n = k;
	return v;
}

static int
diff_at(struct buf *path, const json_t *a, const json_t *b, json_t *out)
{
	const char **keys = NULL;
	size_t n = 0, mark = path->len;
	int rc = STATUS_OK;

	if (json_equal((json_t *)a, (json_t *)b))
		return STATUS_OK;
	if (!json_is_object(a) || !json_is_object(b))
		return change(out, path->data != NULL ? path->data : "",
			      "replace", a, b);
	if ((keys = keys_of(a, b, &n)) == NULL)
		return STATUS_NOMEM;
	for (size_t i = 0; i < n && rc == STATUS_OK; i++) {
		const json_t *x = json_object_get(a, keys[i]);
		const json_t *y = json_object_get(b, keys[i]);
		rc = pointer_add(path, keys[i]);
		if (rc != STATUS_OK)
			break;
		if (x == NULL)
			rc = change(out, path->data, "add", NULL, y);
		else if (y == NULL)
			rc = change(out, path->data, "remove", x, NULL);
		else
			rc = diff_at(path, x, y, out);
		buf_rollback(path, mark);
	}
	free(keys);
	return rc;
}

json_t *
kube_diff(const json_t *before, const json_t *after)
{
	json_t *out = json_array();
	struct buf path;
	int rc;

	if (out == NULL)
		return NULL;
	buf_init(&path, 64 * 1024);
	rc = diff_at(&path, before, after, out);
	buf_free(&path);
	if (rc != STATUS_OK) {
		json_decref(out);
		return NULL;
	}
	return out;
}
