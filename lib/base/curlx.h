/*
 * curlx.h - what every upstream request of the gateway sets on its curl
 * handle (metrics instances, the Kubernetes API), in one place.
 */
#ifndef SEXTANT_CURLX_H
#define SEXTANT_CURLX_H
#include <curl/curl.h>

/*
 * No signals (worker threads), http and https only, no redirect (one
 * would carry the request's token to another host), the peer's
 * certificate and name verified, against ca_file when not NULL.
 */
void curlx_secure(CURL *h, const char *ca_file);

#endif
