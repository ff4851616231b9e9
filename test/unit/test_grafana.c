/*
 * test_grafana.c - unit tests for lib/prom/grafana: the parsers of Prometheus's
 * and Grafana's JSON, and the client against a scripted HTTP server on
 * loopback (a thread per connection): request shapes (POST form, bearer
 * token, Grafana's proxy path after the data source lookup), retries on
 * 5xx and connection errors but not on 4xx, the circuit breaker's three
 * states, timeouts, the response size cap, token_file rotation, both
 * caches, the concurrency limit and cancellation.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "conf/config.h"
#include "prom/grafana.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- parsers ------------------------------------------------------------ */

static int
parse_matrix(const char *body, size_t max, struct grafana_matrix **m,
	     struct grafana_counts *total, char *msg)
{
	return grafana_parse_matrix(body, strlen(body), max, m, total, msg,
				    256);
}

static void
test_parse_matrix(void **state)
{
	const char *body =
		"{\"status\":\"success\",\"warnings\":[\"w1\",\"w2\"],"
		"\"data\":{\"resultType\":\"matrix\",\"result\":["
		"{\"metric\":{\"job\":\"api\",\"__name__\":\"up\"},"
		"\"values\":[[1700000000,\"1\"],[1700000015.5,\"NaN\"],"
		"[1700000030,\"+Inf\"],[1700000045,\"-Inf\"]]},"
		"{\"metric\":{},\"values\":[[1700000000.001,\"2.5e3\"]]},"
		"{\"metric\":{\"a\":\"b\"},\"histograms\":[]}]}}";
	struct grafana_matrix *m = NULL;
	struct grafana_counts total = {0, 0};
	char msg[256];

	(void)state;
	assert_int_equal(parse_matrix(body, 100, &m, &total, msg), STATUS_OK);
	assert_int_equal(total.points, 5);
	assert_int_equal(total.series, 3);
	assert_int_equal(m->nseries, 3);
	assert_int_equal(m->npoints, 5);
	assert_string_equal(m->warning, "w1");
	/* labels sorted by name */
	assert_int_equal(m->series[0].nlabels, 2);
	assert_string_equal(m->series[0].labels[0].name, "__name__");
	assert_string_equal(m->series[0].labels[0].value, "up");
	assert_string_equal(m->series[0].labels[1].name, "job");
	assert_int_equal(m->series[0].npoints, 4);
	assert_int_equal(m->series[0].points[0].t_ms, 1700000000000LL);
	assert_true(m->series[0].points[0].v == 1);
	assert_int_equal(m->series[0].points[1].t_ms, 1700000015500LL);
	assert_true(isnan(m->series[0].points[1].v));
	assert_true(isinf(m->series[0].points[2].v) &&
		    m->series[0].points[2].v > 0);
	assert_true(isinf(m->series[0].points[3].v) &&
		    m->series[0].points[3].v < 0);
	assert_int_equal(m->series[1].points[0].t_ms, 1700000000001LL);
	assert_true(m->series[1].points[0].v == 2500);
	assert_int_equal(m->series[2].npoints, 0);
	grafana_matrix_free(m);

	/* over the limit: refused, with the count */
	m = (struct grafana_matrix *)1;
	assert_int_equal(parse_matrix(body, 4, &m, &total, msg), STATUS_LIMIT);
	assert_null(m);
	assert_int_equal(total.points, 5);
	assert_int_equal(total.series, 3);
	assert_non_null(strstr(msg, "3 series with 5 points"));
	grafana_matrix_free(NULL);
}

static void
test_parse_matrix_refused(void **state)
{
	static const struct {
		const char *body, *needle;
	} cases[] = {
		{"", "not JSON"},
		{"<html>502</html>", "not JSON"},
		{"[]", "not a Prometheus API answer"},
		{"{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":"
		 "\"parse error at char 3\"}",
		 "bad_data: parse error at char 3"},
		{"{\"status\":\"error\"}", "error: no message"},
		{"{\"status\":\"success\"}", "no \"data\""},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"vector\","
		 "\"result\":[]}}",
		 "resultType \"vector\""},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\"}"
		 "}",
		 "not a range query's matrix"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[1]}}",
		 "series 1 is not an object"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"values\":[]}]}}",
		 "no \"metric\""},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{\"a\":1},\"values\":[]}]}}",
		 "label values must be strings"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{},\"values\":[[1,2]]}]}}",
		 "point 1 is not"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{},\"values\":[[1,\"x\"]]}]}}",
		 "point 1 is not"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{},\"values\":[[1,\"1\",3]]}]}}",
		 "point 1 is not"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{},\"values\":[[-1,\"1\"]]}]}}",
		 "point 1 is not"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{},\"values\":[[1e300,\"1\"]]}]}}",
		 "point 1 is not"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{},\"values\":[[2,\"1\"],[1,\"1\"]]}"
		 "]}}",
		 "point 2 is not after"},
		{"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
		 "\"result\":[{\"metric\":{},\"values\":[[1,\"\"]]}]}}",
		 "point 1 is not"},
	};

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		struct grafana_matrix *m = (struct grafana_matrix *)1;
		char msg[256] = "";

		if (parse_matrix(cases[i].body, 100, &m, NULL, msg) !=
		    STATUS_INVALID)
			fail_msg("case %zu accepted", i);
		assert_null(m);
		if (strstr(msg, cases[i].needle) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, msg,
				 cases[i].needle);
	}
}

static void
test_parse_names(void **state)
{
	const char *body = "{\"status\":\"success\",\"data\":[\"up\",\"b\","
			   "\"a_total\"]}";
	struct grafana_names *n = NULL;
	char msg[256];

	(void)state;
	assert_int_equal(
		grafana_parse_names(body, strlen(body), &n, msg, sizeof(msg)),
		STATUS_OK);
	assert_int_equal(n->n, 3);
	assert_string_equal(n->v[0], "a_total"); /* sorted */
	assert_string_equal(n->v[2], "up");
	assert_true(grafana_names_has(n, "b"));
	assert_false(grafana_names_has(n, "c"));
	assert_false(grafana_names_has(NULL, "b"));
	grafana_names_release(n);
	grafana_names_release(NULL);

	body = "{\"status\":\"success\",\"data\":[\"up\",3]}";
	n = (struct grafana_names *)1;
	assert_int_equal(
		grafana_parse_names(body, strlen(body), &n, msg, sizeof(msg)),
		STATUS_INVALID);
	assert_null(n);
	assert_string_equal(msg, "name 2 is not a string");
	body = "{\"status\":\"success\",\"data\":{}}";
	assert_int_equal(
		grafana_parse_names(body, strlen(body), &n, msg, sizeof(msg)),
		STATUS_INVALID);
}

static void
test_parse_metadata(void **state)
{
	const char *body =
		"{\"status\":\"success\",\"data\":{\"lat_seconds\":[{\"type\":"
		"\"histogram\",\"help\":\"Latency.\",\"unit\":\"seconds\"},"
		"{\"type\":\"gauge\",\"help\":\"x\",\"unit\":\"\"}]}}";
	struct grafana_metadata md;
	char msg[256];

	(void)state;
	assert_int_equal(grafana_parse_metadata(body, strlen(body),
						"lat_seconds", &md, msg,
						sizeof(msg)),
			 STATUS_OK);
	assert_true(md.found);
	assert_string_equal(md.type, "histogram");
	assert_string_equal(md.unit, "seconds");
	assert_string_equal(md.help, "Latency.");
	assert_int_equal(grafana_parse_metadata(body, strlen(body), "other",
						&md, msg, sizeof(msg)),
			 STATUS_OK);
	assert_false(md.found);
	assert_string_equal(md.type, "");
	body = "{\"status\":\"success\",\"data\":[]}";
	assert_int_equal(grafana_parse_metadata(body, strlen(body), "x", &md,
						msg, sizeof(msg)),
			 STATUS_INVALID);
}

static void
test_parse_datasource(void **state)
{
	char uid[16], msg[256];
	const char *ok = "{\"id\":1,\"uid\":\"prom-1\",\"name\":\"Prom\","
			 "\"type\":\"prometheus\",\"url\":\"http://p:9090\"}";
	const char *loki = "{\"uid\":\"l\",\"type\":\"loki\"}";
	const char *longuid = "{\"uid\":\"0123456789abcdefXYZ\",\"type\":"
			      "\"prometheus\"}";

	(void)state;
	assert_int_equal(grafana_parse_datasource(ok, strlen(ok), uid,
						  sizeof(uid), msg,
						  sizeof(msg)),
			 STATUS_OK);
	assert_string_equal(uid, "prom-1");
	assert_int_equal(grafana_parse_datasource(loki, strlen(loki), uid,
						  sizeof(uid), msg,
						  sizeof(msg)),
			 STATUS_UNSUPPORTED);
	assert_non_null(strstr(msg, "type \"loki\", not prometheus"));
	assert_int_equal(grafana_parse_datasource(longuid, strlen(longuid), uid,
						  sizeof(uid), msg,
						  sizeof(msg)),
			 STATUS_INVALID);
	assert_int_equal(grafana_parse_datasource("{}", 2, uid, sizeof(uid),
						  msg, sizeof(msg)),
			 STATUS_INVALID);
	assert_int_equal(grafana_parse_datasource("nope", 4, uid, sizeof(uid),
						  msg, sizeof(msg)),
			 STATUS_INVALID);
}

/* ---- [grafana.<name>] / [prometheus.<name>] in the config -------------- */

static char *const no_env[] = {NULL};

static struct config *
load_config(const char *toml, struct config_error *err)
{
	struct config *c = NULL;

	if (config_load_text(toml, strlen(toml), "t.toml", no_env, &c, err) !=
	    STATUS_OK)
		return NULL;
	return c;
}

static char *
printed(const struct config *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	config_print(c, f);
	fclose(f);
	return text;
}

static void
test_config_instances(void **state)
{
	const char *toml = "[prometheus.local]\n"
			   "url = \"http://127.0.0.1:9090\"\n"
			   "retries = 0\n"
			   "\n"
			   "[grafana.main]\n"
			   "url = \"https://grafana.example.com\"\n"
			   "datasource_uid = \"prom\"\n"
			   "token = \"glsa_secret\"\n"
			   "breaker_cooldown_s = 5\n"
			   "max_response_bytes = 2048\n"
			   "\n"
			   "[prometheus.b-2]\n"
			   "url = \"http://p2\"\n"
			   "services = [\"checkout\", \"billing=payments-v2\", "
			   "\"*\"]\n"
			   "service_label = \"job\"\n"
			   "http_metric = \"http_server_duration_seconds\"\n";
	struct config_error err;
	struct config *c = load_config(toml, &err), *d, *e;
	const struct config_instance *in;
	char *p1, *p2, keys[256];

	(void)state;
	if (c == NULL)
		fail_msg("%s: %s", err.key, err.msg);
	assert_int_equal(c->instances.n, 3);
	/* file order across both tables: the first is the default */
	in = &c->instances.v[0];
	assert_string_equal(in->name, "local");
	assert_int_equal(in->kind, CONFIG_INSTANCE_PROMETHEUS);
	assert_int_equal(in->retries, 0);
	assert_int_equal(in->timeout_ms, 30000); /* defaults */
	assert_int_equal(in->max_concurrent, 5);
	assert_int_equal(in->names_ttl_s, 300);
	assert_int_equal(in->metadata_ttl_s, 3600);
	assert_string_equal(in->token, "");
	in = &c->instances.v[1];
	assert_string_equal(in->name, "main");
	assert_int_equal(in->kind, CONFIG_INSTANCE_GRAFANA);
	assert_string_equal(in->datasource_uid, "prom");
	assert_string_equal(in->token, "glsa_secret");
	assert_int_equal(in->breaker_cooldown_s, 5);
	assert_int_equal(in->max_response_bytes, 2048);
	assert_string_equal(c->instances.v[2].name, "b-2");
	/* the [Prometheus] source of query_metrics: defaults, then set */
	assert_int_equal(c->instances.v[0].services.n, 0);
	assert_string_equal(in->service_label, "service_name");
	assert_string_equal(in->http_metric,
			    "http_server_request_duration_seconds");
	assert_string_equal(in->grpc_metric, "rpc_server_duration_seconds");
	assert_string_equal(in->sql_metric,
			    "db_client_operation_duration_seconds");
	in = &c->instances.v[2];
	assert_int_equal(in->services.n, 3);
	assert_string_equal(in->services.v[0], "checkout");
	assert_string_equal(in->services.v[1], "billing=payments-v2");
	assert_string_equal(in->services.v[2], "*");
	assert_string_equal(in->service_label, "job");
	assert_string_equal(in->http_metric, "http_server_duration_seconds");
	/* printed with the token masked; the print loads back the same */
	p1 = printed(c);
	assert_non_null(strstr(p1, "\n[grafana.main]\nurl = "));
	assert_non_null(strstr(p1, "token = \"****\""));
	assert_null(strstr(p1, "glsa_secret"));
	assert_null(strstr(strstr(p1, "[prometheus.local]"), "datasource_uid = "
							     "\"\"\n["));
	d = load_config(p1, &err);
	if (d == NULL)
		fail_msg("reloading the print: %s: %s", err.key, err.msg);
	p2 = printed(d);
	assert_string_equal(p1, p2);
	/* instances need a restart */
	assert_int_equal(config_diff_nonreloadable(c, c, keys, sizeof(keys)),
			 0);
	e = load_config("[prometheus.local]\nurl = \"http://x\"\n", &err);
	assert_non_null(e);
	assert_int_equal(config_diff_nonreloadable(c, e, keys, sizeof(keys)),
			 1);
	assert_string_equal(keys, "[grafana.*]/[prometheus.*]");
	config_free(e);
	/* none by default */
	e = load_config("", &err);
	assert_int_equal(e->instances.n, 0);
	config_free(e);
	free(p1);
	free(p2);
	config_free(c);
	config_free(d);
}

static void
test_config_instances_refused(void **state)
{
	static const struct {
		const char *toml, *key, *needle;
	} cases[] = {
		{"[grafana.x]\nurl = \"http://a\"\n", "grafana.x",
		 "exactly one of datasource_uid and datasource_name"},
		{"[grafana.x]\nurl = \"http://a\"\ndatasource_uid = \"u\"\n"
		 "datasource_name = \"n\"\n",
		 "grafana.x", "exactly one of"},
		{"[prometheus.x]\nurl = \"http://a\"\ndatasource_uid = "
		 "\"u\"\n",
		 "prometheus.x.datasource_uid", "for [grafana.*] instances"},
		{"[prometheus.x]\nretries = 1\n", "prometheus.x",
		 "url is required"},
		{"[prometheus.x]\nurl = \"127.0.0.1:9090\"\n", "prometheus.x",
		 "must start with http:// or https://"},
		{"[prometheus.x]\nurl = \"http://a/?q=1\"\n", "prometheus.x",
		 "without spaces, query or fragment"},
		{"[prometheus.x]\nurl = \"http://a\"\nretrys = 3\n",
		 "prometheus.x.retrys", "did you mean \"retries\"?"},
		{"[prometheus.x]\nurl = \"http://a\"\ntimeout_ms = 5\n",
		 "prometheus.x.timeout_ms",
		 "expected an integer between 100 and 600000, got integer 5"},
		{"[prometheus.x]\nurl = 7\n", "prometheus.x.url",
		 "expected a string, got integer 7"},
		{"[prometheus.x]\nurl = \"http://a\"\ntoken = 5\n",
		 "prometheus.x.token", "expected a string, got an integer"},
		{"[prometheus.x]\nurl = \"http://a\"\ntoken = \"a\"\n"
		 "token_file = \"/f\"\n",
		 "prometheus.x", "token or token_file, not both"},
		{"[prometheus.x]\nurl = \"http://a\"\ntoken = \"a b\"\n",
		 "prometheus.x", "printable ASCII"},
		{"[prometheus.\"a b\"]\nurl = \"http://a\"\n", "prometheus.a b",
		 "letters, digits, '_' or '-'"},
		{"[prometheus.x]\nurl = \"http://a\"\n[grafana.x]\nurl = "
		 "\"http://b\"\ndatasource_uid = \"u\"\n",
		 "grafana.x", "already used by [prometheus.x]"},
		{"[grafana]\nurl = \"http://a\"\n", "grafana.url",
		 "expected a table: write [grafana.url]"},
		{"grafana = 3\n", "grafana",
		 "expected a table of named instances such as [grafana.main]"},
		{"[[prometheus]]\nurl = \"http://a\"\n", "prometheus",
		 "got an array of tables"},
		/* query_metrics' [Prometheus] source */
		{"[prometheus.x]\nurl = \"http://a\"\nservices = \"a\"\n",
		 "prometheus.x.services",
		 "expected an array of strings, got string \"a\""},
		{"[prometheus.x]\nurl = \"http://a\"\nservices = [\"a\", 3]\n",
		 "prometheus.x.services",
		 "item 2: expected an array of strings, got integer 3"},
		{"[prometheus.x]\nurl = \"http://a\"\nservices = [\"\"]\n",
		 "prometheus.x.services", "item 1: expected a service name"},
		{"[prometheus.x]\nurl = \"http://a\"\nservices = [\"=v\"]\n",
		 "prometheus.x.services", "item 1: expected a service name"},
		{"[prometheus.x]\nurl = \"http://a\"\nservices = [\"a=\"]\n",
		 "prometheus.x.services", "item 1: expected a service name"},
		{"[prometheus.x]\nurl = \"http://a\"\nservice_label = "
		 "\"__name__\"\n",
		 "prometheus.x",
		 "service_label must be a Prometheus label name"},
		{"[prometheus.x]\nurl = \"http://a\"\nservice_label = "
		 "\"a-b\"\n",
		 "prometheus.x",
		 "service_label must be a Prometheus label name"},
		{"[prometheus.x]\nurl = \"http://a\"\nhttp_metric = "
		 "\"http{x}\"\n",
		 "prometheus.x",
		 "http_metric must be a Prometheus metric name"},
		{"[prometheus.x]\nurl = \"http://a\"\nsql_metric = \"\"\n",
		 "prometheus.x", "sql_metric must be a Prometheus metric name"},
	};
	char many[4096] = "";
	size_t len = 0;
	struct config_error err;

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		memset(&err, 0, sizeof(err));
		if (load_config(cases[i].toml, &err) != NULL)
			fail_msg("case %zu accepted", i);
		if (strcmp(err.key, cases[i].key) != 0 ||
		    strstr(err.msg, cases[i].needle) == NULL)
			fail_msg("case %zu: %s: %s (want %s: ...%s...)", i,
				 err.key, err.msg, cases[i].key,
				 cases[i].needle);
		/* a token's value is never echoed */
		if (strstr(cases[i].toml, "token") != NULL &&
		    strstr(err.msg, "a b") != NULL)
			fail_msg("case %zu shows the token: %s", i, err.msg);
	}
	for (int i = 0; i <= CONFIG_MAX_METRICS_INSTANCES; i++)
		len += (size_t)snprintf(
			many + len, sizeof(many) - len,
			"[prometheus.p%d]\nurl = \"http://a\"\n", i);
	assert_null(load_config(many, &err));
	assert_non_null(strstr(err.msg, "more than 16 metrics instances"));
}

/* ---- a scripted HTTP server ---------------------------------------------- */

#define MAX_REQS   64
#define MAX_CONNS  32
#define REQ_MAX	   16384
#define SCRIPT_MAX 16

struct reply {
	int status; /* 0: close the connection without answering */
	const char *body;
	int delay_ms;
};

struct fake {
	int fd, port;
	pthread_t acceptor;
	pthread_t conns[MAX_CONNS];
	int nconns;
	atomic_bool stop;
	pthread_mutex_t mu;
	struct reply script[SCRIPT_MAX];
	int nscript, next;    /* past the end: the last reply again */
	char *reqs[MAX_REQS]; /* request line, headers and body */
	int nreqs;
};

static struct fake srv;

static void
fake_script(const struct reply *r, int n)
{
	pthread_mutex_lock(&srv.mu);
	memcpy(srv.script, r, (size_t)n * sizeof(*r));
	srv.nscript = n;
	srv.next = 0;
	for (int i = 0; i < srv.nreqs; i++)
		free(srv.reqs[i]);
	srv.nreqs = 0;
	pthread_mutex_unlock(&srv.mu);
}

static int
fake_count(void)
{
	int n;

	pthread_mutex_lock(&srv.mu);
	n = srv.nreqs;
	pthread_mutex_unlock(&srv.mu);
	return n;
}

/* The i-th request's text (valid until the next fake_script). */
static const char *
fake_req(int i)
{
	const char *r;

	pthread_mutex_lock(&srv.mu);
	r = i < srv.nreqs ? srv.reqs[i] : "";
	pthread_mutex_unlock(&srv.mu);
	return r;
}

static void
sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* recv that gives up when the server stops (a failed test may leave its
 * client connected). */
static ssize_t
recv_some(int fd, char *buf, size_t n)
{
	while (!srv.stop) {
		struct pollfd p = {fd, POLLIN, 0};

		if (poll(&p, 1, 20) > 0)
			return recv(fd, buf, n, 0);
	}
	return -1;
}

static void *
conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[REQ_MAX + 1];
	size_t have = 0;

	for (;;) {
		char *end, *cl, head[512];
		size_t hlen, body = 0, total;
		struct reply r;
		ssize_t n;

		buf[have] = '\0';
		end = strstr(buf, "\r\n\r\n");
		if (end == NULL) {
			if (have >= REQ_MAX)
				break;
			n = recv_some(fd, buf + have, REQ_MAX - have);
			if (n <= 0)
				break;
			have += (size_t)n;
			continue;
		}
		hlen = (size_t)(end - buf) + 4;
		cl = strcasestr(buf, "\r\nContent-Length:");
		if (cl != NULL && cl < end)
			body = strtoul(cl + 17, NULL, 10);
		total = hlen + body;
		if (total > REQ_MAX)
			break;
		while (have < total) {
			n = recv_some(fd, buf + have, REQ_MAX - have);
			if (n <= 0)
				goto out;
			have += (size_t)n;
		}
		pthread_mutex_lock(&srv.mu);
		if (srv.nreqs < MAX_REQS)
			srv.reqs[srv.nreqs++] = strndup(buf, total);
		r = srv.script[srv.next < srv.nscript ? srv.next
						      : srv.nscript - 1];
		srv.next++;
		pthread_mutex_unlock(&srv.mu);
		memmove(buf, buf + total, have - total);
		have -= total;
		for (int waited = 0; waited < r.delay_ms && !srv.stop;
		     waited += 10)
			sleep_ms(10);
		if (r.status == 0)
			break;
		snprintf(head, sizeof(head),
			 "HTTP/1.1 %d X\r\nContent-Type: application/json\r\n"
			 "Content-Length: %zu\r\n%s\r\n",
			 r.status, strlen(r.body),
			 r.status == 302 ? "Location: http://elsewhere/\r\n"
					 : "");
		if (send(fd, head, strlen(head), MSG_NOSIGNAL) < 0 ||
		    send(fd, r.body, strlen(r.body), MSG_NOSIGNAL) < 0)
			break;
	}
out:
	close(fd);
	return NULL;
}

static void *
accept_main(void *arg)
{
	(void)arg;
	while (!srv.stop) {
		struct pollfd p = {srv.fd, POLLIN, 0};
		int c;

		if (poll(&p, 1, 20) <= 0)
			continue;
		c = accept(srv.fd, NULL, NULL);
		if (c < 0)
			continue;
		pthread_mutex_lock(&srv.mu);
		if (srv.nconns < MAX_CONNS &&
		    pthread_create(&srv.conns[srv.nconns], NULL, conn_main,
				   (void *)(intptr_t)c) == 0)
			srv.nconns++;
		else
			close(c);
		pthread_mutex_unlock(&srv.mu);
	}
	return NULL;
}

static int
listen_any(int *port)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
	    listen(fd, 64) != 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	*port = ntohs(a.sin_port);
	return fd;
}

static int
fake_start(void **state)
{
	(void)state;
	memset(&srv, 0, sizeof(srv));
	pthread_mutex_init(&srv.mu, NULL);
	srv.fd = listen_any(&srv.port);
	if (srv.fd < 0)
		return -1;
	log_set_level(LOG_LEVEL_ERROR);
	return pthread_create(&srv.acceptor, NULL, accept_main, NULL);
}

/* Every client is gone (grafana_free closes its connections) first. */
static int
fake_stop(void **state)
{
	(void)state;
	srv.stop = true;
	pthread_join(srv.acceptor, NULL);
	close(srv.fd);
	for (int i = 0; i < srv.nconns; i++)
		pthread_join(srv.conns[i], NULL);
	for (int i = 0; i < srv.nreqs; i++)
		free(srv.reqs[i]);
	pthread_mutex_destroy(&srv.mu);
	return 0;
}

/* ---- the client ---------------------------------------------------------- */

static const char names_body[] =
	"{\"status\":\"success\",\"data\":[\"up\",\"http_requests_total\"]}";
static const char matrix_body[] =
	"{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
	"\"result\":[{\"metric\":{\"job\":\"api\"},\"values\":"
	"[[1700000000,\"1\"],[1700000060,\"3\"]]}]}}";

static char url[64];

static struct grafana_config
prom_config(void)
{
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", srv.port);
	return (struct grafana_config){
		.name = "t",
		.kind = GRAFANA_KIND_PROMETHEUS,
		.url = url,
		.token = "s3cret",
		.connect_timeout_ms = 1000,
		.timeout_ms = 2000,
		.max_response_bytes = 1 << 20,
		.max_concurrent = 2,
		.queue_timeout_ms = 1000,
		.retries = 2,
		.retry_base_ms = 10,
		.breaker_failures = 3,
		.breaker_cooldown_ms = 300,
		.names_ttl_ms = 60000,
		.metadata_ttl_ms = 60000,
	};
}

static struct grafana *
client(const struct grafana_config *c, const struct grafana_metrics *m)
{
	struct grafana *g = NULL;
	char err[256];

	if (grafana_new(c, m, &g, err, sizeof(err)) != STATUS_OK)
		fail_msg("grafana_new: %s", err);
	return g;
}

static int
query(struct grafana *g, const struct grafana_opts *o,
      struct grafana_matrix **m, struct grafana_error *e)
{
	return grafana_query_range(g, o, "rate(x{a=\"b c\"}[1m])",
				   1700000000000LL, 1700000060500LL, 15000,
				   10000, m, NULL, e);
}

static void
test_config_refused(void **state)
{
	static const struct {
		const char *url, *uid, *name, *token, *tfile;
		enum grafana_kind kind;
		const char *needle;
	} cases[] = {
		{"ftp://x", NULL, NULL, NULL, NULL, GRAFANA_KIND_PROMETHEUS,
		 "http:// or https://"},
		{NULL, NULL, NULL, NULL, NULL, GRAFANA_KIND_PROMETHEUS,
		 "http:// or https://"},
		{"http://x/?a=b", NULL, NULL, NULL, NULL,
		 GRAFANA_KIND_PROMETHEUS, "without spaces, query"},
		{"http://x", NULL, NULL, NULL, NULL, GRAFANA_KIND_GRAFANA,
		 "exactly one of datasource_uid"},
		{"http://x", "u", "n", NULL, NULL, GRAFANA_KIND_GRAFANA,
		 "exactly one of datasource_uid"},
		{"http://x", "u", NULL, NULL, NULL, GRAFANA_KIND_PROMETHEUS,
		 "for Grafana instances"},
		{"http://x", NULL, NULL, "a", "/f", GRAFANA_KIND_PROMETHEUS,
		 "token or token_file, not both"},
		{"http://x", NULL, NULL, "a b", NULL, GRAFANA_KIND_PROMETHEUS,
		 "printable ASCII"},
		{"http://x", NULL, NULL, "a\r\nX-Evil: 1", NULL,
		 GRAFANA_KIND_PROMETHEUS, "printable ASCII"},
	};
	struct grafana_config c = prom_config();
	struct grafana *g = (struct grafana *)1;
	char err[256];

	(void)state;
	for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
		c = prom_config();
		c.url = cases[i].url;
		c.datasource_uid = cases[i].uid;
		c.datasource_name = cases[i].name;
		c.token = cases[i].token;
		c.token_file = cases[i].tfile;
		c.kind = cases[i].kind;
		assert_int_equal(grafana_new(&c, NULL, &g, err, sizeof(err)),
				 STATUS_INVALID);
		assert_null(g);
		if (strstr(err, cases[i].needle) == NULL)
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err,
				 cases[i].needle);
	}
	c = prom_config();
	c.max_concurrent = 0;
	assert_int_equal(grafana_new(&c, NULL, &g, err, sizeof(err)),
			 STATUS_INVALID);
	grafana_free(NULL);
}

static void
test_query_range(void **state)
{
	struct grafana_config c = prom_config();
	struct grafana *g = client(&c, NULL);
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	const char *r;
	struct reply ok = {200, matrix_body, 0};

	(void)state;
	fake_script(&ok, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	assert_int_equal(m->nseries, 1);
	assert_int_equal(m->npoints, 2);
	grafana_matrix_free(m);
	assert_int_equal(fake_count(), 1);
	r = fake_req(0);
	assert_non_null(strstr(r, "POST /api/v1/query_range HTTP/1.1\r\n"));
	assert_non_null(strstr(r, "\r\nAuthorization: Bearer s3cret\r\n"));
	assert_non_null(strstr(r, "\r\nAccept: application/json\r\n"));
	/* the query percent-encoded; times in seconds with milliseconds */
	assert_non_null(strstr(r, "\r\n\r\nquery=rate%28x%7Ba%3D%22b%20c%22"
				  "%7D%5B1m%5D%29&start=1700000000&end="
				  "1700000060.500&step=15"));
	/* one connection, reused */
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	grafana_matrix_free(m);
	assert_int_equal(fake_count(), 2);
	pthread_mutex_lock(&srv.mu);
	assert_int_equal(srv.nconns, 1);
	pthread_mutex_unlock(&srv.mu);
	assert_int_equal(grafana_kind(g), GRAFANA_KIND_PROMETHEUS);
	assert_string_equal(grafana_name(g), "t");
	/* the trailing slash of the base URL is dropped */
	assert_int_equal(strlen(grafana_url(g)), strlen(url) - 1);
	grafana_free(g);
}

static void
test_grafana_proxy(void **state)
{
	struct grafana_config c = prom_config();
	struct reply rs[] = {
		{200,
		 "{\"id\":3,\"uid\":\"p/1\",\"name\":\"My Prom\",\"type\":"
		 "\"prometheus\",\"url\":\"http://prom:9090\"}",
		 0},
		{200, names_body, 0},
		{200, matrix_body, 0},
	};
	struct grafana_names *n = NULL;
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct grafana *g;

	(void)state;
	c.kind = GRAFANA_KIND_GRAFANA;
	c.datasource_name = "My Prom";
	g = client(&c, NULL);
	fake_script(rs, 3);
	assert_int_equal(grafana_metric_names(g, NULL, -1, &n, &e), STATUS_OK);
	assert_true(grafana_names_has(n, "up"));
	grafana_names_release(n);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	grafana_matrix_free(m);
	assert_int_equal(fake_count(), 3);
	assert_non_null(strstr(fake_req(0),
			       "GET /api/datasources/name/My%20Prom HTTP/1.1"));
	assert_non_null(strstr(fake_req(0), "Authorization: Bearer s3cret"));
	assert_non_null(strstr(fake_req(1),
			       "GET /api/datasources/proxy/uid/p%2F1/api/v1/"
			       "label/__name__/values HTTP/1.1"));
	assert_non_null(strstr(fake_req(2),
			       "POST /api/datasources/proxy/uid/p%2F1/api/v1/"
			       "query_range HTTP/1.1"));
	grafana_free(g);

	/* by uid, and a data source of another type is refused */
	c.datasource_name = NULL;
	c.datasource_uid = "logs";
	g = client(&c, NULL);
	rs[0].body = "{\"uid\":\"logs\",\"type\":\"loki\"}";
	fake_script(rs, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_INVALID);
	assert_null(m);
	assert_int_equal(e.kind, GRAFANA_FAIL_REFUSED);
	assert_non_null(strstr(fake_req(0), "GET /api/datasources/uid/logs "));
	assert_non_null(strstr(e.client, "not prometheus"));
	assert_int_equal(fake_count(), 1);
	grafana_free(g);
}

static void
test_retries(void **state)
{
	struct grafana_config c = prom_config();
	struct grafana_metrics gm = {0};
	struct reply flaky[] = {
		{503, "{\"status\":\"error\",\"error\":\"busy\"}", 0},
		{500, "oops", 0},
		{200, matrix_body, 0},
	};
	struct reply hangup[] = {
		{0, "", 0}, /* connection closed without an answer */
		{0, "", 0},
		{200, matrix_body, 0},
	};
	struct reply bad[] = {
		{400,
		 "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":"
		 "\"1:5: parse error: unexpected \\\"}\\\"\"}",
		 0},
		{200, matrix_body, 0},
	};
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct grafana *g;
	struct expo *reg = NULL;
	struct expo_family *f;

	(void)state;
	assert_int_equal(expo_new(&reg), STATUS_OK);
	f = expo_family(reg, EXPO_COUNTER, "c", NULL, "k", NULL, 0);
	gm.retries = expo_series(f, (const char *[]){"retries"});
	gm.requests_failed = expo_series(f, (const char *[]){"failed"});
	gm.requests_ok = expo_series(f, (const char *[]){"ok"});
	g = client(&c, &gm);
	/* a fresh connection closed: curl's own reconnect (for reused
	 * connections only) does not hide it */
	fake_script(hangup, 3);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	grafana_matrix_free(m);
	assert_int_equal(fake_count(), 3);
	assert_true(expo_value(gm.retries) == 2);
	assert_true(expo_value(gm.requests_failed) == 2);
	assert_true(expo_value(gm.requests_ok) == 1);
	fake_script(flaky, 3);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	grafana_matrix_free(m);
	assert_int_equal(fake_count(), 3);
	assert_true(expo_value(gm.retries) == 4);
	assert_true(expo_value(gm.requests_failed) == 4);
	assert_true(expo_value(gm.requests_ok) == 2);

	/* a 4xx is not retried, and says what Prometheus said */
	fake_script(bad, 2);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_INVALID);
	assert_int_equal(fake_count(), 1);
	assert_int_equal(e.kind, GRAFANA_FAIL_QUERY);
	assert_int_equal(e.http_status, 400);
	assert_non_null(strstr(e.client, "Prometheus refused the query (HTTP "
					 "400): bad_data: 1:5: parse error"));
	assert_int_equal(grafana_breaker_state(g), GRAFANA_BREAKER_CLOSED);

	/* 5xx every time: retries then gives up, naming the URL */
	flaky[0].status = 502;
	fake_script(flaky, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_IO);
	assert_int_equal(fake_count(), 3);
	assert_int_equal(e.kind, GRAFANA_FAIL_UNAVAILABLE);
	assert_int_equal(e.http_status, 502);
	assert_non_null(strstr(e.url, "/api/v1/query_range"));
	assert_null(strchr(e.url, '?'));
	assert_non_null(strstr(e.client, "HTTP 502"));
	assert_non_null(strstr(e.client, "after 3 attempts"));
	assert_non_null(strstr(e.client, "circuit breaker closed (1 "
					 "consecutive failure of the 3"));
	assert_null(strstr(e.client, "s3cret"));
	grafana_free(g);
	expo_free(reg);
}

static void
test_connection_refused(void **state)
{
	struct grafana_config c = prom_config();
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct grafana *g;
	char dead[64];
	int port, fd = listen_any(&port);

	(void)state;
	close(fd); /* nothing listens there now */
	snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", port);
	c.url = dead;
	g = client(&c, NULL);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_IO);
	assert_int_equal(e.kind, GRAFANA_FAIL_UNAVAILABLE);
	assert_int_equal(e.http_status, 0);
	assert_non_null(strstr(e.client, dead));
	assert_non_null(strstr(e.client, "after 3 attempts"));
	grafana_free(g);
}

static void
test_breaker(void **state)
{
	struct grafana_config c = prom_config();
	struct grafana_metrics gm = {0};
	struct reply down = {503, "{}", 0}, up = {200, matrix_body, 0};
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct expo *reg = NULL;
	struct expo_family *f;
	struct grafana *g;

	(void)state;
	assert_int_equal(expo_new(&reg), STATUS_OK);
	f = expo_family(reg, EXPO_GAUGE, "g", NULL, "k", NULL, 0);
	gm.circuit_state = expo_series(f, (const char *[]){"state"});
	gm.circuit_opens = expo_series(
		expo_family(reg, EXPO_COUNTER, "o", NULL, NULL, NULL, 0), NULL);
	c.retries = 0;
	c.breaker_failures = 2;
	g = client(&c, &gm);
	fake_script(&down, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_IO);
	assert_int_equal(e.breaker, GRAFANA_BREAKER_CLOSED);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_IO);
	assert_int_equal(e.breaker, GRAFANA_BREAKER_OPEN);
	assert_non_null(strstr(e.client, "circuit breaker open after 2 "
					 "consecutive failures"));
	assert_int_equal(grafana_breaker_state(g), GRAFANA_BREAKER_OPEN);
	assert_true(expo_value(gm.circuit_state) == GRAFANA_BREAKER_OPEN);
	assert_true(expo_value(gm.circuit_opens) == 1);
	/* open: fails at once, nothing sent */
	assert_int_equal(fake_count(), 2);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_IO);
	assert_int_equal(fake_count(), 2);
	assert_int_equal(e.kind, GRAFANA_FAIL_UNAVAILABLE);
	assert_non_null(strstr(e.client, "is failing: circuit breaker open"));
	assert_non_null(strstr(e.client, "for another 1 s"));
	/* after the cool-down one trial goes through; it fails: open again */
	sleep_ms(350);
	assert_int_equal(grafana_breaker_state(g), GRAFANA_BREAKER_HALF_OPEN);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_IO);
	assert_int_equal(fake_count(), 3);
	assert_int_equal(e.breaker, GRAFANA_BREAKER_OPEN);
	assert_true(expo_value(gm.circuit_opens) == 2);
	/* the next trial succeeds: closed */
	sleep_ms(350);
	fake_script(&up, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	grafana_matrix_free(m);
	assert_int_equal(grafana_breaker_state(g), GRAFANA_BREAKER_CLOSED);
	assert_true(expo_value(gm.circuit_state) == GRAFANA_BREAKER_CLOSED);
	/* a 4xx proves the upstream reachable: no failure counted */
	down.status = 404;
	fake_script(&down, 1);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(query(g, NULL, &m, &e), STATUS_INVALID);
		assert_int_equal(e.kind, GRAFANA_FAIL_REFUSED);
	}
	assert_int_equal(grafana_breaker_state(g), GRAFANA_BREAKER_CLOSED);
	assert_non_null(strstr(e.client, "HTTP 404"));
	grafana_free(g);
	expo_free(reg);
}

static void
test_timeout_and_cap(void **state)
{
	struct grafana_config c = prom_config();
	struct reply slow = {200, matrix_body, 1500};
	struct reply big = {200, NULL, 0}, redirect = {302, "{}", 0};
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct grafana *g;
	/* static: a server thread may still be sending it after the client
	 * gave up */
	static char body[5000];
	struct timespec t0, t1;

	(void)state;
	c.timeout_ms = 300;
	c.max_response_bytes = 2048;
	g = client(&c, NULL);
	fake_script(&slow, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_IO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* a slow answer is not retried: one attempt, about timeout_ms */
	assert_int_equal(fake_count(), 1);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	assert_int_equal(e.kind, GRAFANA_FAIL_UNAVAILABLE);
	assert_non_null(strstr(e.client, "no answer within 300 ms"));

	memset(body, ' ', 4999);
	body[4999] = '\0';
	big.body = body;
	fake_script(&big, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_INVALID);
	assert_int_equal(e.kind, GRAFANA_FAIL_BAD_RESPONSE);
	assert_non_null(strstr(e.client, "larger than 2048 bytes"));
	assert_int_equal(fake_count(), 1);

	fake_script(&redirect, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_INVALID);
	assert_int_equal(e.kind, GRAFANA_FAIL_REFUSED);
	assert_non_null(strstr(e.client, "redirects (HTTP 302)"));
	assert_int_equal(fake_count(), 1);
	grafana_free(g);
}

static void
write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
test_token_file(void **state)
{
	struct grafana_config c = prom_config();
	struct reply ok = {200, matrix_body, 0};
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct grafana *g;
	char path[] = "/tmp/sextant-token-XXXXXX";
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	write_file(path, "  first-token\n");
	c.token = NULL;
	c.token_file = path;
	g = client(&c, NULL);
	fake_script(&ok, 1);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	grafana_matrix_free(m);
	assert_non_null(strstr(fake_req(0), "Bearer first-token\r\n"));
	/* rotated: another size, so seen even within the mtime's grain */
	write_file(path, "second-token-longer\n");
	assert_int_equal(query(g, NULL, &m, &e), STATUS_OK);
	grafana_matrix_free(m);
	assert_non_null(strstr(fake_req(1), "Bearer second-token-longer\r\n"));
	/* unreadable or empty: refused, nothing sent, no secret shown */
	write_file(path, "\n");
	assert_int_equal(query(g, NULL, &m, &e), STATUS_INVALID);
	assert_int_equal(e.kind, GRAFANA_FAIL_REFUSED);
	assert_non_null(strstr(e.client, "does not hold a token"));
	unlink(path);
	assert_int_equal(query(g, NULL, &m, &e), STATUS_INVALID);
	assert_non_null(strstr(e.client, "cannot be read"));
	assert_int_equal(fake_count(), 2);
	grafana_free(g);
}

static void
test_caches(void **state)
{
	struct grafana_config c = prom_config();
	struct grafana_metrics gm = {0};
	struct reply names = {200, names_body, 0};
	struct reply meta = {200,
			     "{\"status\":\"success\",\"data\":{\"up\":[{"
			     "\"type\":\"gauge\",\"help\":\"h\",\"unit\":\"\"}"
			     "]}}",
			     0};
	struct grafana_names *a = NULL, *b = NULL;
	struct grafana_metadata md;
	struct grafana_error e;
	struct expo *reg = NULL;
	struct expo_family *f;
	struct grafana *g;

	(void)state;
	assert_int_equal(expo_new(&reg), STATUS_OK);
	f = expo_family(reg, EXPO_COUNTER, "c", NULL, "k", NULL, 0);
	gm.names_hits = expo_series(f, (const char *[]){"nh"});
	gm.names_misses = expo_series(f, (const char *[]){"nm"});
	gm.meta_hits = expo_series(f, (const char *[]){"mh"});
	gm.meta_misses = expo_series(f, (const char *[]){"mm"});
	g = client(&c, &gm);
	fake_script(&names, 1);
	assert_int_equal(grafana_metric_names(g, NULL, -1, &a, &e), STATUS_OK);
	assert_int_equal(grafana_metric_names(g, NULL, -1, &b, &e), STATUS_OK);
	assert_ptr_equal(a, b); /* shared */
	assert_int_equal(fake_count(), 1);
	grafana_names_release(b);
	/* a max age shorter than the list's: fetched again; the old list
	 * stays valid for its holder */
	sleep_ms(20);
	assert_int_equal(grafana_metric_names(g, NULL, 10, &b, &e), STATUS_OK);
	assert_int_equal(fake_count(), 2);
	assert_ptr_not_equal(a, b);
	assert_string_equal(a->v[1], "up");
	grafana_names_release(a);
	grafana_names_release(b);
	assert_true(expo_value(gm.names_hits) == 1);
	assert_true(expo_value(gm.names_misses) == 2);

	fake_script(&meta, 1);
	assert_int_equal(grafana_metric_metadata(g, NULL, "up", &md, &e),
			 STATUS_OK);
	assert_true(md.found);
	assert_string_equal(md.type, "gauge");
	assert_non_null(strstr(fake_req(0), "GET /api/v1/metadata?metric=up "));
	assert_int_equal(grafana_metric_metadata(g, NULL, "up", &md, &e),
			 STATUS_OK);
	assert_string_equal(md.type, "gauge");
	/* no metadata is an answer too, cached like the others */
	assert_int_equal(grafana_metric_metadata(g, NULL, "x:y", &md, &e),
			 STATUS_OK);
	assert_false(md.found);
	assert_non_null(strstr(fake_req(1), "metric=x%3Ay "));
	assert_int_equal(grafana_metric_metadata(g, NULL, "x:y", &md, &e),
			 STATUS_OK);
	assert_int_equal(fake_count(), 2);
	assert_true(expo_value(gm.meta_hits) == 2);
	assert_true(expo_value(gm.meta_misses) == 2);
	grafana_free(g);

	/* TTL 0: never served from the cache */
	c.names_ttl_ms = 0;
	c.metadata_ttl_ms = 0;
	g = client(&c, NULL);
	fake_script(&names, 1);
	assert_int_equal(grafana_metric_names(g, NULL, -1, &a, &e), STATUS_OK);
	grafana_names_release(a);
	sleep_ms(5);
	assert_int_equal(grafana_metric_names(g, NULL, -1, &a, &e), STATUS_OK);
	grafana_names_release(a);
	assert_int_equal(fake_count(), 2);
	grafana_free(g);
	expo_free(reg);
}

struct bg {
	struct grafana *g;
	int rc;
	struct grafana_error e;
};

static void *
bg_query(void *arg)
{
	struct bg *b = arg;
	struct grafana_matrix *m = NULL;

	b->rc = query(b->g, NULL, &m, &b->e);
	grafana_matrix_free(m);
	return NULL;
}

static void
test_concurrency(void **state)
{
	struct grafana_config c = prom_config();
	struct grafana_metrics gm = {0};
	struct reply slow = {200, matrix_body, 600};
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct expo *reg = NULL;
	struct expo_family *f;
	struct bg b = {0};
	pthread_t t;

	(void)state;
	assert_int_equal(expo_new(&reg), STATUS_OK);
	f = expo_family(reg, EXPO_GAUGE, "g", NULL, "k", NULL, 0);
	gm.inflight = expo_series(f, (const char *[]){"inflight"});
	gm.waiting = expo_series(f, (const char *[]){"waiting"});
	c.max_concurrent = 1;
	c.queue_timeout_ms = 100;
	b.g = client(&c, &gm);
	fake_script(&slow, 1);
	assert_int_equal(pthread_create(&t, NULL, bg_query, &b), 0);
	while (fake_count() == 0)
		sleep_ms(5);
	assert_true(expo_value(gm.inflight) == 1);
	/* the only slot is taken: this one waits 100 ms, then gives up */
	assert_int_equal(query(b.g, NULL, &m, &e), STATUS_IO);
	assert_int_equal(e.kind, GRAFANA_FAIL_UNAVAILABLE);
	assert_non_null(strstr(e.client, "is busy: 1 queries are running"));
	pthread_join(t, NULL);
	assert_int_equal(b.rc, STATUS_OK);
	assert_int_equal(fake_count(), 1);
	assert_true(expo_value(gm.inflight) == 0);
	assert_true(expo_value(gm.waiting) == 0);
	/* a busy instance is not a failing one */
	assert_int_equal(grafana_breaker_state(b.g), GRAFANA_BREAKER_CLOSED);
	grafana_free(b.g);
	expo_free(reg);
}

static atomic_int polls;

static bool
cancel_after_a_few(void *arg)
{
	(void)arg;
	return atomic_fetch_add(&polls, 1) >= 3;
}

static void
test_cancel(void **state)
{
	struct grafana_config c = prom_config();
	struct reply slow = {200, matrix_body, 3000};
	struct grafana_opts o = {.cancelled = cancel_after_a_few};
	struct grafana_matrix *m = NULL;
	struct grafana_error e;
	struct grafana *g;
	struct timespec t0, t1;

	(void)state;
	c.timeout_ms = 10000;
	g = client(&c, NULL);
	fake_script(&slow, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(query(g, &o, &m, &e), STATUS_CANCELLED);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(e.kind, GRAFANA_FAIL_CANCELLED);
	assert_true(t1.tv_sec - t0.tv_sec < 2);
	/* a cancelled call is no failure of the upstream */
	assert_int_equal(grafana_breaker_state(g), GRAFANA_BREAKER_CLOSED);
	grafana_free(g);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_matrix),
		cmocka_unit_test(test_parse_matrix_refused),
		cmocka_unit_test(test_parse_names),
		cmocka_unit_test(test_parse_metadata),
		cmocka_unit_test(test_parse_datasource),
		cmocka_unit_test(test_config_refused),
		cmocka_unit_test(test_config_instances),
		cmocka_unit_test(test_config_instances_refused),
		cmocka_unit_test_setup_teardown(test_query_range, fake_start,
						fake_stop),
		cmocka_unit_test_setup_teardown(test_grafana_proxy, fake_start,
						fake_stop),
		cmocka_unit_test_setup_teardown(test_retries, fake_start,
						fake_stop),
		cmocka_unit_test_setup_teardown(test_connection_refused,
						fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_breaker, fake_start,
						fake_stop),
		cmocka_unit_test_setup_teardown(test_timeout_and_cap,
						fake_start, fake_stop),
		cmocka_unit_test_setup_teardown(test_token_file, fake_start,
						fake_stop),
		cmocka_unit_test_setup_teardown(test_caches, fake_start,
						fake_stop),
		cmocka_unit_test_setup_teardown(test_concurrency, fake_start,
						fake_stop),
		cmocka_unit_test_setup_teardown(test_cancel, fake_start,
						fake_stop),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
