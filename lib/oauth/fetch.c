/*
 * fetch.c - JSON documents from an authorization server (see fetch.h).
 */
#include "oauth/fetch.h"

#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"
#include "base/curlx.h"

static size_t
on_write(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	buf_append(b, p, size * n);
	return buf_error(b) == STATUS_OK ? size * n : 0;
}

int
fetch_json(const char *url, const struct fetch_opts *o, json_t **out, char *err,
	   size_t errlen)
{
	CURL *h = NULL;
	struct curl_slist *hdrs = NULL, *t;
	struct buf body;
	char curl_err[CURL_ERROR_SIZE] = "";
	json_t *doc = NULL;
	long http = 0;
	CURLcode cc;
	int rc;

	*out = NULL;
	buf_init(&body, FETCH_MAX_BYTES);
	if ((h = curl_easy_init()) == NULL) {
		rc = STATUS_NOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	curlx_secure(h, o->ca_file != NULL && o->ca_file[0] != '\0' ? o->ca_file
								    : NULL);
	if ((t = curl_slist_append(hdrs, "Accept: application/json")) != NULL)
		hdrs = t;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)o->timeout_ms);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, curl_err);
	if (o->form != NULL) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, o->form);
		if (o->user != NULL) {
			curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
			curl_easy_setopt(h, CURLOPT_USERNAME, o->user);
			curl_easy_setopt(h, CURLOPT_PASSWORD,
					 o->password != NULL ? o->password
							     : "");
		}
	}
	cc = curl_easy_perform(h);
	if (cc == CURLE_WRITE_ERROR && buf_error(&body) == STATUS_LIMIT) {
		rc = STATUS_LIMIT;
		snprintf(err, errlen, "%s: answer longer than %d bytes", url,
			 FETCH_MAX_BYTES);
		goto out;
	}
	if (cc != CURLE_OK) {
		rc = STATUS_IO;
		snprintf(err, errlen, "%s: %s", url,
			 curl_err[0] != '\0' ? curl_err
					     : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &http);
	if (http != 200) {
		rc = STATUS_IO;
		snprintf(err, errlen, "%s: HTTP status %ld, expected 200", url,
			 http);
		goto out;
	}
	doc = json_loadb(body.data != NULL ? body.data : "", body.len, 0, NULL);
	if (!json_is_object(doc)) {
		rc = STATUS_INVALID;
		snprintf(err, errlen, "%s: answer is not a JSON object", url);
		goto out;
	}
	*out = doc;
	doc = NULL;
	rc = STATUS_OK;
out:
	json_decref(doc);
	buf_free(&body);
	curl_slist_free_all(hdrs);
	if (h != NULL)
		curl_easy_cleanup(h);
	return rc;
}
