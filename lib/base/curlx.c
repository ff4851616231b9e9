/*
 * curlx.c - the settings every upstream request shares (see curlx.h).
 */
#include "base/curlx.h"

void
curlx_secure(CURL *h, const char *ca_file)
{
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (ca_file != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, ca_file);
}
