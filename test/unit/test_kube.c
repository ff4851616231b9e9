/*
 * test_kube.c - unit tests for lib/kube: plurals of Istio and Gateway API
 * kinds, the paths built (namespaced, across namespaces, core group,
 * label selectors percent-encoded) and every part refused with its name,
 * the JSON merge patch against RFC 7386's own examples (Appendix A), the
 * changes kube_diff lists, and the failures kube_request reports before
 * any answer (no API server configured, a token file it cannot read, a
 * port where nothing listens).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static json_t *
js(const char *s)
{
	json_error_t e;
	json_t *v = json_loads(s, JSON_DECODE_ANY, &e);

	if (v == NULL)
		fail_msg("bad test JSON %s: %s", s, e.text);
	return v;
}

static void
test_plural(void **state)
{
	static const struct {
		const char *kind, *plural;
	} cases[] = {
		{"VirtualService", "virtualservices"},
		{"DestinationRule", "destinationrules"},
		{"Gateway", "gateways"},
		{"ServiceEntry", "serviceentries"},
		{"AuthorizationPolicy", "authorizationpolicies"},
		{"PeerAuthentication", "peerauthentications"},
		{"Sidecar", "sidecars"},
		{"EnvoyFilter", "envoyfilters"},
		{"Telemetry", "telemetries"},
		{"WasmPlugin", "wasmplugins"},
		{"GatewayClass", "gatewayclasses"},
		{"HTTPRoute", "httproutes"},
		{"ReferenceGrant", "referencegrants"},
		{"virtualservices", "virtualservices"}, /* already plural */
		{"gateway", "gateways"},
		{"Proxy", "proxies"},
		{"Way", "ways"}, /* a vowel before y */
		{"Mesh", "meshes"},
		{"Box", "boxes"},
	};
	char out[72];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(kube_plural(cases[i].kind, out, sizeof(out)),
				 STATUS_OK);
		assert_string_equal(out, cases[i].plural);
	}
	assert_int_equal(kube_plural("", out, sizeof(out)), STATUS_INVALID);
	assert_int_equal(kube_plural("Virtual/Service", out, sizeof(out)),
			 STATUS_INVALID);
	assert_int_equal(kube_plural("Virtual.Service", out, sizeof(out)),
			 STATUS_INVALID);
	assert_int_equal(kube_plural("VirtualService", out, 10), STATUS_LIMIT);
}

static void
test_path(void **state)
{
	static const struct {
		struct kube_ref r;
		const char *path;
	} cases[] = {
		{{"networking.istio.io", "v1", "VirtualService", "bookinfo",
		  "reviews", NULL},
		 "/apis/networking.istio.io/v1/namespaces/bookinfo/"
		 "virtualservices/reviews"},
		{{"networking.istio.io", "v1beta1", "DestinationRule",
		  "bookinfo", NULL, NULL},
		 "/apis/networking.istio.io/v1beta1/namespaces/bookinfo/"
		 "destinationrules"},
		{{"gateway.networking.k8s.io", "v1", "HTTPRoute", NULL, NULL,
		  NULL},
		 "/apis/gateway.networking.k8s.io/v1/httproutes"},
		{{"", "v1", "ConfigMap", "default", "x.y-1", NULL},
		 "/api/v1/namespaces/default/configmaps/x.y-1"},
		{{"networking.istio.io", "v1", "VirtualService", "bookinfo",
		  NULL, "app=reviews,version!=v1"},
		 "/apis/networking.istio.io/v1/namespaces/bookinfo/"
		 "virtualservices?labelSelector=app%3Dreviews%2Cversion%21%"
		 "3Dv1"},
		{{"networking.istio.io", "v1", "VirtualService", "", "",
		  "tier in (a, b)"},
		 "/apis/networking.istio.io/v1/virtualservices?labelSelector="
		 "tier%20in%20%28a%2C%20b%29"},
		/* a selector is for lists: not on an object's path */
		{{"networking.istio.io", "v1", "VirtualService", "ns", "vs",
		  "app=x"},
		 "/apis/networking.istio.io/v1/namespaces/ns/virtualservices/"
		 "vs"},
	};
	char out[KUBE_PATH_MAX], err[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(kube_path(&cases[i].r, out, sizeof(out), err,
					   sizeof(err)),
				 STATUS_OK);
		assert_string_equal(out, cases[i].path);
		assert_string_equal(err, "");
	}
}

static void
test_path_refused(void **state)
{
	static const struct {
		struct kube_ref r;
		const char *names; /* the start of err */
	} cases[] = {
		{{"networking.istio.io/../..", "v1", "VirtualService", "ns",
		  "x", NULL},
		 "group \"networking.istio.io/../..\""},
		{{"Networking.istio.io", "v1", "VirtualService", "ns", "x",
		  NULL},
		 "group"},
		{{"networking..istio.io", "v1", "VirtualService", "ns", "x",
		  NULL},
		 "group"},
		{{"networking.istio.io", "1", "VirtualService", "ns", "x",
		  NULL},
		 "version \"1\""},
		{{"networking.istio.io", "v1/..", "VirtualService", "ns", "x",
		  NULL},
		 "version"},
		{{"networking.istio.io", NULL, "VirtualService", "ns", "x",
		  NULL},
		 "version \"\""},
		{{"networking.istio.io", "v1", "virtual-services", "ns", "x",
		  NULL},
		 "kind \"virtual-services\""},
		{{"networking.istio.io", "v1", NULL, "ns", "x", NULL},
		 "kind \"\""},
		{{"networking.istio.io", "v1", "VirtualService", "book.info",
		  "x", NULL},
		 "namespace \"book.info\""},
		{{"networking.istio.io", "v1", "VirtualService", "-ns", "x",
		  NULL},
		 "namespace"},
		{{"networking.istio.io", "v1", "VirtualService", "ns",
		  "../secrets", NULL},
		 "object \"../secrets\""},
		{{"networking.istio.io", "v1", "VirtualService", "ns",
		  "Reviews", NULL},
		 "object"},
		{{"networking.istio.io", "v1", "VirtualService", "ns", "a?b=c",
		  NULL},
		 "object"},
		{{"networking.istio.io", "v1", "VirtualService", "ns", "x-",
		  NULL},
		 "object"},
	};
	char out[KUBE_PATH_MAX], err[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		assert_int_equal(kube_path(&cases[i].r, out, sizeof(out), err,
					   sizeof(err)),
				 STATUS_INVALID);
		if (strncmp(err, cases[i].names, strlen(cases[i].names)) != 0)
			fail_msg("case %zu: \"%s\" does not start with \"%s\"",
				 i, err, cases[i].names);
		assert_non_null(strstr(err, "expected"));
	}
	/* a name of 64 characters is one DNS label too long, 63 fits */
	{
		char name[80];
		struct kube_ref r = {"networking.istio.io",
				     "v1",
				     "Gateway",
				     NULL,
				     "gw",
				     NULL};
		memset(name, 'a', 63);
		name[63] = '\0';
		r.namespace = name;
		assert_int_equal(
			kube_path(&r, out, sizeof(out), err, sizeof(err)),
			STATUS_OK);
		name[63] = 'a';
		name[64] = '\0';
		assert_int_equal(
			kube_path(&r, out, sizeof(out), err, sizeof(err)),
			STATUS_INVALID);
		r.namespace = "ns";
		assert_int_equal(kube_path(&r, out, 20, err, sizeof(err)),
				 STATUS_LIMIT);
	}
}

/* RFC 7386 Appendix A, every example. */
static void
test_merge_patch(void **state)
{
	static const char *const cases[][3] = {
		{"{\"a\":\"b\"}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
		{"{\"a\":\"b\"}", "{\"b\":\"c\"}", "{\"a\":\"b\",\"b\":\"c\"}"},
		{"{\"a\":\"b\"}", "{\"a\":null}", "{}"},
		{"{\"a\":\"b\",\"b\":\"c\"}", "{\"a\":null}", "{\"b\":\"c\"}"},
		{"{\"a\":[\"b\"]}", "{\"a\":\"c\"}", "{\"a\":\"c\"}"},
		{"{\"a\":\"c\"}", "{\"a\":[\"b\"]}", "{\"a\":[\"b\"]}"},
		{"{\"a\":{\"b\":\"c\"}}", "{\"a\":{\"b\":\"d\",\"c\":null}}",
		 "{\"a\":{\"b\":\"d\"}}"},
		{"{\"a\":[{\"b\":\"c\"}]}", "{\"a\":[1]}", "{\"a\":[1]}"},
		{"[\"a\",\"b\"]", "[\"c\",\"d\"]", "[\"c\",\"d\"]"},
		{"{\"a\":\"b\"}", "[\"c\"]", "[\"c\"]"},
		{"{\"a\":\"foo\"}", "null", "null"},
		{"{\"a\":\"foo\"}", "\"bar\"", "\"bar\""},
		{"{\"e\":null}", "{\"a\":1}", "{\"e\":null,\"a\":1}"},
		{"[1,2]", "{\"a\":\"b\",\"c\":null}", "{\"a\":\"b\"}"},
		{"{}", "{\"a\":{\"bb\":{\"ccc\":null}}}",
		 "{\"a\":{\"bb\":{}}}"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		json_t *t = js(cases[i][0]), *p = js(cases[i][1]);
		json_t *want = js(cases[i][2]);
		json_t *got = kube_merge_patch(t, p);
		char *s = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);

		if (!json_equal(got, want))
			fail_msg("case %zu: got %s, want %s", i, s,
				 cases[i][2]);
		free(s);
		json_decref(t);
		json_decref(p);
		json_decref(want);
		json_decref(got);
	}
	/* the target is not changed in place */
	{
		json_t *t = js("{\"a\":{\"b\":1}}");
		json_t *p = js("{\"a\":{\"b\":2}}");
		json_t *got = kube_merge_patch(t, p);
		assert_int_equal(json_integer_value(json_object_get(
					 json_object_get(t, "a"), "b")),
				 1);
		json_decref(t);
		json_decref(p);
		json_decref(got);
	}
}

static void
test_diff(void **state)
{
	static const char *const cases[][3] = {
		{"{\"a\":1}", "{\"a\":1}", "[]"},
		{"{\"spec\":{\"hosts\":[\"a\"],\"x\":1}}",
		 "{\"spec\":{\"hosts\":[\"a\",\"b\"],\"x\":1}}",
		 "[{\"path\":\"/spec/hosts\",\"op\":\"replace\","
		 "\"from\":[\"a\"],\"to\":[\"a\",\"b\"]}]"},
		{"{\"b\":1,\"a\":{\"c\":2}}", "{\"a\":{\"d\":3},\"e\":null}",
		 "[{\"path\":\"/a/c\",\"op\":\"remove\",\"from\":2},"
		 "{\"path\":\"/a/d\",\"op\":\"add\",\"to\":3},"
		 "{\"path\":\"/b\",\"op\":\"remove\",\"from\":1},"
		 "{\"path\":\"/e\",\"op\":\"add\",\"to\":null}]"},
		{"{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"x\","
		 "\"a~b\":\"1\"}}}",
		 "{\"metadata\":{\"labels\":{\"app.kubernetes.io/name\":\"y\","
		 "\"a~b\":\"2\"}}}",
		 "[{\"path\":\"/metadata/labels/app.kubernetes.io~1name\","
		 "\"op\":\"replace\",\"from\":\"x\",\"to\":\"y\"},"
		 "{\"path\":\"/metadata/labels/a~0b\",\"op\":\"replace\","
		 "\"from\":\"1\",\"to\":\"2\"}]"},
		{"{\"a\":{\"b\":1}}", "{\"a\":\"s\"}",
		 "[{\"path\":\"/a\",\"op\":\"replace\",\"from\":{\"b\":1},"
		 "\"to\":\"s\"}]"},
		{"[1]", "[2]",
		 "[{\"path\":\"\",\"op\":\"replace\",\"from\":[1],\"to\":[2]}"
		 "]"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		json_t *a = js(cases[i][0]), *b = js(cases[i][1]);
		json_t *want = js(cases[i][2]);
		json_t *got = kube_diff(a, b);
		char *s = json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY);

		if (!json_equal(got, want))
			fail_msg("case %zu: got %s, want %s", i, s,
				 cases[i][2]);
		free(s);
		json_decref(a);
		json_decref(b);
		json_decref(want);
		json_decref(got);
	}
	/* a patch's preview: the merge, then its changes */
	{
		json_t *obj = js("{\"metadata\":{\"name\":\"r\"},\"spec\":"
				 "{\"http\":[{\"timeout\":\"1s\"}]}}");
		json_t *patch = js("{\"spec\":{\"http\":[{\"timeout\":\"5s\"}],"
				   "\"gateways\":[\"gw\"]}}");
		json_t *after = kube_merge_patch(obj, patch);
		json_t *d = kube_diff(obj, after);

		assert_int_equal(json_array_size(d), 2);
		assert_string_equal(json_string_value(json_object_get(
					    json_array_get(d, 0), "path")),
				    "/spec/gateways");
		assert_string_equal(json_string_value(json_object_get(
					    json_array_get(d, 1), "path")),
				    "/spec/http");
		json_decref(obj);
		json_decref(patch);
		json_decref(after);
		json_decref(d);
	}
}

static void
test_request_failures(void **state)
{
	struct kube_config cfg = {NULL, NULL, NULL, 2000};
	struct kube_error e;
	json_t *out = (json_t *)1;
	char path[] = "/apis/networking.istio.io/v1/virtualservices";

	(void)state;
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(kube_request(&cfg, "GET", path, NULL, NULL, &out, &e),
			 STATUS_INVALID);
	assert_null(out);
	assert_int_equal(e.kind, KUBE_FAIL_CONFIG);
	assert_non_null(strstr(e.client, "api_url"));

	cfg.api_url = "https://127.0.0.1:1";
	cfg.token_file = "/nonexistent/token";
	assert_int_equal(kube_request(&cfg, "GET", path, NULL, NULL, &out, &e),
			 STATUS_INVALID);
	assert_int_equal(e.kind, KUBE_FAIL_CONFIG);
	assert_non_null(strstr(e.client, "/nonexistent/token"));

	/* port 1 on loopback: nothing listens, no answer */
	cfg.token_file = NULL;
	assert_int_equal(kube_request(&cfg, "GET", path, NULL, NULL, &out, &e),
			 STATUS_IO);
	assert_null(out);
	assert_int_equal(e.kind, KUBE_FAIL_UNAVAILABLE);
	assert_int_equal(e.http_status, 0);
	assert_non_null(strstr(e.client, "https://127.0.0.1:1"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plural),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_path_refused),
		cmocka_unit_test(test_merge_patch),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_request_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
