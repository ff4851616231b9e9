/*
 * demo.c - the demo dataset generator (see demo.h).  Spans come in groups
 * (one trace, or the traces of one assistant session), each generated from
 * its own PRNG stream seeded by (seed, group number): first as a tree of
 * nodes with times, then written out as rows, once per source that sees
 * the node.  A group that does not fit the batch is generated again for the
 * next one, so batch sizes never change the rows.
 *
 * Time: a group starts where the rows before it fall on the cumulative
 * traffic curve of the window (a daily shape), so the dataset fills the
 * 24 hours in time order whatever its size.  Metric points are made last,
 * minute by minute, from per-minute summaries of the server spans.
 */
#include "demo/demo.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/hex.h"

#define NS_PER_MS  1000000ull
#define NS_PER_S   1000000000ull
#define NS_PER_MIN (60 * NS_PER_S)

/* Nodes of one group: an assistant session of 5 turns stays under 200;
 * each node is at most two rows, so a group always fits DEMO_BATCH_MIN. */
#define GROUP_NODES_MAX	 400
#define GROUP_TRACES_MAX 8
/* Text budget of the rows: per row on average (attributes are about
 * 250-400 bytes), and a hard maximum for one row (events included). */
#define ROW_TEXT_AVG   768
#define ROW_TEXT_MAX   4096
#define POINT_TEXT_MAX 256

/* ---- the PRNG: xoshiro256** seeded with splitmix64 ----------------------- */

struct rng {
	uint64_t s[4];
};

static uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Streams of one seed are independent: the seed is mixed first, then the
 * stream number, each through splitmix64. */
static void
rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed;
	int i;

	x = splitmix64(&x) ^ stream;
	for (i = 0; i < 4; i++)
		r->s[i] = splitmix64(&x);
}

static uint64_t
rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1). */
static double
rng_unif(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n). */
static uint32_t
rng_below(struct rng *r, uint32_t n)
{
	return (uint32_t)(((rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

static bool
rng_chance(struct rng *r, double p)
{
	return rng_unif(r) < p;
}

/* Standard normal (Box-Muller, one of the pair). */
static double
rng_normal(struct rng *r)
{
	double u1 = 1.0 - rng_unif(r), u2 = rng_unif(r);

	return sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
}

static void
rng_bytes(struct rng *r, uint8_t *p, size_t n)
{
	size_t i;
	uint64_t v = 0;

	for (i = 0; i < n; i++) {
		if (i % 8 == 0)
			v = rng_next(r);
		p[i] = (uint8_t)(v >> (8 * (i % 8)));
	}
	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return;
	p[n - 1] = 1; /* all-zero ids are invalid in OTLP */
}

/* ---- the world: services, routes, RPCs, queries, models ----------------- */

enum svc {
	SVC_GATEWAY,
	SVC_CART,
	SVC_CHECKOUT,
	SVC_INVENTORY,
	SVC_SEARCH,
	SVC_PAYMENTS,
	SVC_FRAUD,
	SVC_LEDGER,
	SVC_POSTGRES,
	SVC_NOTIFICATIONS,
	SVC_ASSISTANT,
	SVC_AUTH,
	N_SVC
};

enum lang {
	LANG_GO,
	LANG_JAVA,
	LANG_PYTHON,
	LANG_NODE,
	LANG_C,
};

/* What a node speaks; also the families of the request metrics. */
enum proto {
	PROTO_HTTP,
	PROTO_GRPC,
	PROTO_SQL,
	PROTO_MSG,
	N_PROTO
};

#define SEEN_OTLP (1u << OTLP_SOURCE_OTLP)
#define SEEN_EBPF (1u << OTLP_SOURCE_EBPF)
#define SERVES(p) (1u << (p))
#define PODS_MAX  3

struct service {
	const char *name, *ns, *version;
	enum lang lang;
	unsigned seen;	 /* SEEN_*: who instruments it */
	int pods;	 /* 1..PODS_MAX */
	unsigned serves; /* SERVES(proto): the request metrics it has */
	double cpu_idle; /* cores */
	double cpu_req;	 /* core-seconds per request */
	double mem_mib;
};

static const struct service services[N_SVC] = {
	[SVC_GATEWAY] = {"api-gateway", "shop", "2.8.1", LANG_GO,
			 SEEN_OTLP | SEEN_EBPF, 3, SERVES(PROTO_HTTP), 0.05,
			 0.002, 96},
	[SVC_CART] = {"cart", "shop", "1.4.0", LANG_JAVA, SEEN_EBPF, 2,
		      SERVES(PROTO_HTTP), 0.08, 0.004, 640},
	[SVC_CHECKOUT] = {"checkout", "shop", "3.2.0", LANG_JAVA,
			  SEEN_OTLP | SEEN_EBPF, 3, SERVES(PROTO_HTTP), 0.1,
			  0.012, 768},
	[SVC_INVENTORY] = {"inventory", "shop", "1.9.3", LANG_GO,
			   SEEN_OTLP | SEEN_EBPF, 2,
			   SERVES(PROTO_HTTP) | SERVES(PROTO_GRPC), 0.04, 0.003,
			   128},
	[SVC_SEARCH] = {"search", "shop", "0.12.4", LANG_PYTHON, SEEN_OTLP, 2,
			SERVES(PROTO_HTTP), 0.06, 0.025, 300},
	[SVC_PAYMENTS] = {"payments", "payments", "4.1.2", LANG_GO,
			  SEEN_OTLP | SEEN_EBPF, 3, SERVES(PROTO_HTTP), 0.04,
			  0.006, 110},
	[SVC_FRAUD] = {"fraud", "payments", "2.0.7", LANG_PYTHON, SEEN_EBPF, 2,
		       SERVES(PROTO_GRPC), 0.15, 0.03, 1200},
	[SVC_LEDGER] = {"ledger", "payments", "1.3.5", LANG_JAVA, SEEN_OTLP, 2,
			SERVES(PROTO_GRPC), 0.08, 0.008, 700},
	[SVC_POSTGRES] = {"postgres", "platform", "15.6", LANG_C, SEEN_EBPF, 1,
			  SERVES(PROTO_SQL), 0.2, 0.001, 2048},
	[SVC_NOTIFICATIONS] = {"notifications", "platform", "1.1.0", LANG_NODE,
			       SEEN_OTLP, 2, SERVES(PROTO_MSG), 0.03, 0.01,
			       180},
	[SVC_ASSISTANT] = {"assistant", "platform", "0.9.0", LANG_PYTHON,
			   SEEN_OTLP, 2, SERVES(PROTO_HTTP), 0.05, 0.05, 420},
	[SVC_AUTH] = {"auth", "platform", "2.2.0", LANG_GO, SEEN_EBPF, 2,
		      SERVES(PROTO_GRPC), 0.03, 0.02, 64},
};

/* The part of a route template in braces becomes one of these. */
enum arg {
	ARG_NONE,
	ARG_ID,	     /* 48213 */
	ARG_SKU,     /* SKU-04821 */
	ARG_USER,    /* u1842 */
	ARG_SESSION, /* the session id */
};

struct route {
	const char *method, *route, *name;
	enum arg arg;
	const char *host; /* an external host; NULL: the server's service */
};

enum {
	R_GW_PRODUCT,
	R_INV_ITEM,
	R_GW_SEARCH,
	R_SEARCH,
	R_GW_CART,
	R_CART_GET,
	R_GW_CART_ADD,
	R_CART_ADD,
	R_GW_CHECKOUT,
	R_CHECKOUT,
	R_PAY_CHARGE,
	R_GW_ORDER,
	R_ORDER,
	R_GW_LOGIN,
	R_GW_ASSIST,
	R_ASSIST,
	R_SENDGRID,
};

static const struct route routes[] = {
	[R_GW_PRODUCT] = {"GET", "/api/products/{id}", "GET /api/products/{id}",
			  ARG_ID, NULL},
	[R_INV_ITEM] = {"GET", "/inventory/items/{sku}",
			"GET /inventory/items/{sku}", ARG_SKU, NULL},
	[R_GW_SEARCH] = {"GET", "/api/search", "GET /api/search", ARG_NONE,
			 NULL},
	[R_SEARCH] = {"GET", "/search", "GET /search", ARG_NONE, NULL},
	[R_GW_CART] = {"GET", "/api/cart", "GET /api/cart", ARG_NONE, NULL},
	[R_CART_GET] = {"GET", "/carts/{user_id}", "GET /carts/{user_id}",
			ARG_USER, NULL},
	[R_GW_CART_ADD] = {"POST", "/api/cart/items", "POST /api/cart/items",
			   ARG_NONE, NULL},
	[R_CART_ADD] = {"POST", "/carts/{user_id}/items",
			"POST /carts/{user_id}/items", ARG_USER, NULL},
	[R_GW_CHECKOUT] = {"POST", "/api/checkout", "POST /api/checkout",
			   ARG_NONE, NULL},
	[R_CHECKOUT] = {"POST", "/checkout", "POST /checkout", ARG_NONE, NULL},
	[R_PAY_CHARGE] = {"POST", "/v1/charges", "POST /v1/charges", ARG_NONE,
			  NULL},
	[R_GW_ORDER] = {"GET", "/api/orders/{id}", "GET /api/orders/{id}",
			ARG_ID, NULL},
	[R_ORDER] = {"GET", "/orders/{id}", "GET /orders/{id}", ARG_ID, NULL},
	[R_GW_LOGIN] = {"POST", "/api/login", "POST /api/login", ARG_NONE,
			NULL},
	[R_GW_ASSIST] = {"POST", "/api/assistant/messages",
			 "POST /api/assistant/messages", ARG_NONE, NULL},
	[R_ASSIST] = {"POST", "/v1/sessions/{session_id}/messages",
		      "POST /v1/sessions/{session_id}/messages", ARG_SESSION,
		      NULL},
	[R_SENDGRID] = {"POST", "/v3/mail/send", "POST", ARG_NONE,
			"api.sendgrid.com"},
};

struct rpc {
	const char *service, *method, *name;
};

enum {
	RPC_CHECK_STOCK,
	RPC_RESERVE,
	RPC_SCORE,
	RPC_RECORD,
	RPC_LOGIN,
	RPC_VERIFY,
};

static const struct rpc rpcs[] = {
	[RPC_CHECK_STOCK] = {"inventory.v1.InventoryService", "CheckStock",
			     "inventory.v1.InventoryService/CheckStock"},
	[RPC_RESERVE] = {"inventory.v1.InventoryService", "Reserve",
			 "inventory.v1.InventoryService/Reserve"},
	[RPC_SCORE] = {"fraud.v1.FraudService", "Score",
		       "fraud.v1.FraudService/Score"},
	[RPC_RECORD] = {"ledger.v1.LedgerService", "Record",
			"ledger.v1.LedgerService/Record"},
	[RPC_LOGIN] = {"auth.v1.AuthService", "Login",
		       "auth.v1.AuthService/Login"},
	[RPC_VERIFY] = {"auth.v1.AuthService", "VerifyToken",
			"auth.v1.AuthService/VerifyToken"},
};

struct sql {
	const char *op, *table, *name, *text;
	double median_ms, sigma;
};

enum {
	Q_PRODUCT,
	Q_STOCK,
	Q_SEARCH,
	Q_CART_GET,
	Q_CART_ADD,
	Q_RESERVE,
	Q_ORDER_INSERT,
	Q_ORDER_GET,
	Q_PAYMENT_INSERT,
	Q_LEDGER_INSERT,
	Q_LEDGER_SCAN,
	Q_LEDGER_UPDATE,
	Q_USER,
	Q_SESSION_INSERT,
	Q_TEMPLATE,
};

static const struct sql sqls[] = {
	[Q_PRODUCT] =
		{"SELECT", "products", "SELECT products",
		 "SELECT id, name, price_cents FROM products WHERE id = $1",
		 0.8, 0.5},
	[Q_STOCK] = {"SELECT", "stock", "SELECT stock",
		     "SELECT quantity, reserved FROM stock WHERE sku = $1", 1.4,
		     0.6},
	[Q_SEARCH] = {"SELECT", "products", "SELECT products",
		      "SELECT id, name FROM products WHERE search @@ "
		      "websearch_to_tsquery($1) ORDER BY ts_rank(search, "
		      "websearch_to_tsquery($1)) DESC LIMIT 20",
		      9, 0.7},
	[Q_CART_GET] = {"SELECT", "cart_items", "SELECT cart_items",
			"SELECT sku, quantity FROM cart_items WHERE user_id = "
			"$1",
			0.9, 0.5},
	[Q_CART_ADD] =
		{"INSERT", "cart_items", "INSERT cart_items",
		 "INSERT INTO cart_items (user_id, sku, quantity) VALUES "
		 "($1, $2, $3) ON CONFLICT (user_id, sku) DO UPDATE SET "
		 "quantity = cart_items.quantity + EXCLUDED.quantity",
		 1.6, 0.5},
	[Q_RESERVE] =
		{"UPDATE", "stock", "UPDATE stock",
		 "UPDATE stock SET reserved = reserved + $2 WHERE sku = $1 "
		 "AND quantity - reserved >= $2",
		 2.2, 0.6},
	[Q_ORDER_INSERT] = {"INSERT", "orders", "INSERT orders",
			    "INSERT INTO orders (user_id, total_cents, status) "
			    "VALUES ($1, $2, 'paid') RETURNING id",
			    2.5, 0.5},
	[Q_ORDER_GET] =
		{"SELECT", "orders", "SELECT orders",
		 "SELECT id, status, total_cents, created_at FROM orders "
		 "WHERE id = $1 AND user_id = $2",
		 1.1, 0.5},
	[Q_PAYMENT_INSERT] = {"INSERT", "payments", "INSERT payments",
			      "INSERT INTO payments (order_ref, amount_cents, "
			      "provider_ref) VALUES ($1, $2, $3)",
			      2.4, 0.5},
	[Q_LEDGER_INSERT] = {"INSERT", "ledger_entries",
			     "INSERT ledger_entries",
			     "INSERT INTO ledger_entries (account_id, "
			     "amount_cents, ref) VALUES ($1, $2, $3)",
			     2.8, 0.5},
	[Q_LEDGER_SCAN] = {"SELECT", "ledger_entries", "SELECT ledger_entries",
			   "SELECT id, amount_cents, ref FROM ledger_entries "
			   "WHERE reconciled = false ORDER BY id LIMIT 500",
			   45, 0.5},
	[Q_LEDGER_UPDATE] =
		{"UPDATE", "ledger_entries", "UPDATE ledger_entries",
		 "UPDATE ledger_entries SET reconciled = true WHERE "
		 "id = ANY($1)",
		 12, 0.6},
	[Q_USER] = {"SELECT", "users", "SELECT users",
		    "SELECT id, password_hash, disabled FROM users WHERE email "
		    "= $1",
		    0.9, 0.4},
	[Q_SESSION_INSERT] = {"INSERT", "sessions", "INSERT sessions",
			      "INSERT INTO sessions (user_id, token_hash, "
			      "expires_at) VALUES ($1, $2, $3)",
			      1.8, 0.5},
	[Q_TEMPLATE] =
		{"SELECT", "email_templates", "SELECT email_templates",
		 "SELECT subject, body FROM email_templates WHERE name = "
		 "$1",
		 0.7, 0.4},
};

/* Request models are rows of the seeded model_pricing table
 * (migrations/0004); response models are dated names it prices by prefix. */
struct model {
	const char *provider, *request, *response, *name, *host, *scope;
	double ttft_ms, ms_per_token;
};

enum {
	M_GPT4O,
	M_GPT4O_MINI,
	M_GPT41_MINI,
	M_SONNET,
	M_HAIKU,
	M_GEMINI_FLASH,
	M_GEMINI_LITE,
	N_MODELS
};

static const struct model models[N_MODELS] = {
	[M_GPT4O] = {"openai", "gpt-4o", "gpt-4o-2024-08-06", "chat gpt-4o",
		     "api.openai.com",
		     "opentelemetry.instrumentation.openai_v2", 420, 14},
	[M_GPT4O_MINI] = {"openai", "gpt-4o-mini", "gpt-4o-mini-2024-07-18",
			  "chat gpt-4o-mini", "api.openai.com",
			  "opentelemetry.instrumentation.openai_v2", 300, 7},
	[M_GPT41_MINI] = {"openai", "gpt-4.1-mini", "gpt-4.1-mini-2025-04-14",
			  "chat gpt-4.1-mini", "api.openai.com",
			  "opentelemetry.instrumentation.openai_v2", 320, 8},
	[M_SONNET] = {"anthropic", "claude-sonnet-4",
		      "claude-sonnet-4-20250514", "chat claude-sonnet-4",
		      "api.anthropic.com",
		      "opentelemetry.instrumentation.anthropic", 650, 18},
	[M_HAIKU] = {"anthropic", "claude-3-5-haiku",
		     "claude-3-5-haiku-20241022", "chat claude-3-5-haiku",
		     "api.anthropic.com",
		     "opentelemetry.instrumentation.anthropic", 380, 9},
	[M_GEMINI_FLASH] = {"gcp.gemini", "gemini-2.5-flash",
			    "gemini-2.5-flash", "chat gemini-2.5-flash",
			    "generativelanguage.googleapis.com",
			    "opentelemetry.instrumentation.google_genai", 450,
			    5},
	[M_GEMINI_LITE] = {"gcp.gemini", "gemini-2.0-flash",
			   "gemini-2.0-flash-001", "chat gemini-2.0-flash",
			   "generativelanguage.googleapis.com",
			   "opentelemetry.instrumentation.google_genai", 280,
			   4},
};

struct agent {
	const char *name, *id, *span_name;
};

enum {
	AGENT_SHOPPING,
	AGENT_ORDERS,
};

static const struct agent agents[] = {
	[AGENT_SHOPPING] = {"shopping-assistant", "agent_shop_01",
			    "invoke_agent shopping-assistant"},
	[AGENT_ORDERS] = {"order-support", "agent_orders_01",
			  "invoke_agent order-support"},
};

enum {
	TOOL_SEARCH,
	TOOL_STOCK,
	TOOL_ORDER,
};

static const char *const tool_names[] = {"search_products", "check_stock",
					 "lookup_order"};
static const char *const tool_span_names[] = {"execute_tool search_products",
					      "execute_tool check_stock",
					      "execute_tool lookup_order"};

/* Why a span failed: its status message and, at the origin of the
 * failure, an exception event. */
struct failure {
	const char *type, *message;
	bool exception;
};

enum {
	F_NONE,
	F_LEDGER_DOWN,	  /* payments -> ledger during the burst */
	F_LEDGER_CLIENT,  /* the client span of that call */
	F_PAY_UPSTREAM,	  /* checkout: payments answered 503 */
	F_GW_UPSTREAM,	  /* api-gateway: upstream 5xx */
	F_STOCK_TIMEOUT,  /* the slow stock query hit its timeout */
	F_STOCK_QUERY,	  /* inventory's answer to that */
	F_SEARCH_TIMEOUT, /* search's query was cancelled */
	F_SEARCH_QUERY,	  /* search's answer */
	F_RATE_LIMIT,	  /* an LLM call got 429 */
	F_EMAIL,	  /* SendGrid refused */
	F_BAD_PASSWORD,	  /* auth Login: wrong password (a 4xx) */
	F_OUT_OF_STOCK,	  /* CheckStock */
	F_CARD_DECLINED,  /* fraud said no */
	F_NOT_FOUND,	  /* 404 */
	N_FAILURES
};

static const struct failure failures[N_FAILURES] = {
	[F_LEDGER_DOWN] = {"*fmt.wrapError",
			   "record ledger entry: rpc error: code = Unavailable "
			   "desc = connection error: dial tcp "
			   "ledger.payments.svc.cluster.local:9090: connect: "
			   "connection refused",
			   true},
	[F_LEDGER_CLIENT] = {"UNAVAILABLE",
			     "connection error: dial tcp "
			     "ledger.payments.svc.cluster.local:9090: connect: "
			     "connection refused",
			     false},
	[F_PAY_UPSTREAM] = {"org.springframework.web.client."
			    "HttpServerErrorException$ServiceUnavailable",
			    "503 Service Unavailable from POST "
			    "http://payments.payments.svc.cluster.local:8080/"
			    "v1/charges",
			    true},
	[F_GW_UPSTREAM] = {"502", "upstream answered with an error", false},
	[F_STOCK_TIMEOUT] = {"57014",
			     "canceling statement due to statement timeout",
			     false},
	[F_STOCK_QUERY] = {"*pgconn.PgError",
			   "query stock: ERROR: canceling statement due to "
			   "statement timeout (SQLSTATE 57014)",
			   true},
	[F_SEARCH_TIMEOUT] = {"57014",
			      "canceling statement due to statement timeout",
			      false},
	[F_SEARCH_QUERY] = {"psycopg.errors.QueryCanceled",
			    "canceling statement due to statement timeout",
			    true},
	[F_RATE_LIMIT] = {"RateLimitError",
			  "rate limit reached for requests: retry after 1s",
			  true},
	[F_EMAIL] = {"503", "sendgrid: 503 Service Unavailable", false},
	[F_BAD_PASSWORD] = {"UNAUTHENTICATED", "invalid credentials", false},
	[F_OUT_OF_STOCK] = {"FAILED_PRECONDITION", "insufficient stock", false},
	[F_CARD_DECLINED] = {"402", "card declined", false},
	[F_NOT_FOUND] = {"404", "not found", false},
};

/* Explicit bucket bounds of the latency histograms: the OpenTelemetry
 * semantic-convention advice for http.server.request.duration (seconds);
 * the gRPC one is in milliseconds (rpc.server.duration). */
#define N_BOUNDS  14
#define N_BUCKETS (N_BOUNDS + 1)
static const double bounds_s[N_BOUNDS] = {0.005, 0.01, 0.025, 0.05, 0.075,
					  0.1,	 0.25, 0.5,   0.75, 1,
					  2.5,	 5,    7.5,   10};
static const double bounds_ms[N_BOUNDS] = {
	5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000};

struct metric_names {
	const char *counter, *counter_unit, *counter_desc;
	const char *hist, *hist_unit, *hist_desc;
	const double *bounds;
	double ns_per_unit;
	const char *attrs; /* the family's attributes, JSON members */
};

static const struct metric_names metric_names[N_PROTO] = {
	[PROTO_HTTP] = {"http.server.requests", "{request}",
			"HTTP requests served.", "http.server.request.duration",
			"s", "Duration of HTTP server requests.", bounds_s, 1e9,
			""},
	[PROTO_GRPC] = {"rpc.server.requests", "{request}", "RPCs served.",
			"rpc.server.duration", "ms",
			"Duration of inbound RPCs.", bounds_ms, 1e6,
			"\"rpc.system\":\"grpc\""},
	[PROTO_SQL] = {"db.server.queries", "{query}", "Queries executed.",
		       "db.server.query.duration", "s",
		       "Duration of queries as seen at the server.", bounds_s,
		       1e9, "\"db.system.name\":\"postgresql\""},
	[PROTO_MSG] = {"messaging.process.messages", "{message}",
		       "Messages processed.", "messaging.process.duration", "s",
		       "Duration of message processing.", bounds_s, 1e9,
		       "\"messaging.system\":\"kafka\""},
};

/* ---- generator state ----------------------------------------------------- */

enum op {
	OP_HTTP_SERVER,
	OP_HTTP_CLIENT,
	OP_GRPC_SERVER,
	OP_GRPC_CLIENT,
	OP_SQL_SERVER,
	OP_SQL_CLIENT,
	OP_PRODUCER,
	OP_CONSUMER,
	OP_INTERNAL,
	OP_AGENT,
	OP_CHAT,
	OP_TOOL,
};

struct node {
	uint64_t start, end;
	uint8_t span_id[8];
	int16_t parent; /* node index, -1 for a root */
	uint8_t trace;	/* index in gen.trace_ids */
	uint8_t svc, pod;
	uint8_t op;	 /* enum op */
	uint8_t status;	 /* OTLP status code */
	uint8_t fail;	 /* F_* */
	int8_t peer;	 /* client spans: the server's service, -1 external */
	int8_t model;	 /* chat: index in models */
	uint8_t finish;	 /* chat: 0 stop, 1 tool_calls, 2 error */
	uint8_t session; /* carries session.id */
	int16_t code;	 /* HTTP status or gRPC code, -1 */
	uint16_t what;	 /* index in routes, rpcs, sqls, agents, tools */
	uint32_t arg;	 /* path argument */
	int32_t in_tokens, out_tokens;
	const char *name; /* internal spans */
};

struct gen {
	struct rng r;
	struct node nodes[GROUP_NODES_MAX];
	int n;
	/* past GROUP_NODES_MAX: writes go to scratch and the group is
	 * reported as a bug rather than written */
	bool overflow;
	struct node scratch;
	uint8_t trace_ids[GROUP_TRACES_MAX][16];
	int n_traces, trace;
	char session_id[40]; /* "" outside sessions */
};

/* Per service, protocol and minute of the window: what the metric points
 * report. */
struct minute_stats {
	uint32_t ok, err;
	uint32_t buckets[N_BUCKETS];
	double sum_ns;
};

struct cumul {
	uint64_t ok, err, count;
	uint64_t buckets[N_BUCKETS];
	double sum_ns;
};

struct demo {
	uint64_t seed, spans, start, end;
	size_t batch_spans, batch_points;
	double weight[DEMO_WINDOW_MINS];
	double cdf[DEMO_WINDOW_MINS + 1];

	char dns[N_SVC][64];
	char pod[N_SVC][PODS_MAX][64];
	char deployment[N_SVC][32];
	char node_name[N_SVC][PODS_MAX][48];
	char ip[N_SVC][PODS_MAX][16];
	/* resource attributes, JSON: per pod and source, and per service */
	char resource[N_SVC][PODS_MAX][2][768];
	char svc_resource[N_SVC][2][512];

	uint64_t group;	  /* next group number */
	uint64_t emitted; /* rows handed out */
	struct gen gen;

	struct minute_stats *stats; /* [N_SVC][N_PROTO][DEMO_WINDOW_MINS] */
	int minute;		    /* next minute of points */
	int points_per_minute;
	struct rng mrng;
	struct cumul cumul[N_SVC][N_PROTO];
	double leak[PODS_MAX]; /* search's memory growth, MiB */
};

struct demo_buf {
	struct otlp_span *spans;
	size_t cap_spans;
	struct otlp_point *points;
	size_t cap_points;
	uint64_t *buckets; /* N_BUCKETS per point */
	char *text;
	size_t text_len, text_cap;
};

static struct minute_stats *
stats_at(struct demo *d, int svc, int proto, int minute)
{
	return &d->stats[((size_t)svc * N_PROTO + (size_t)proto) *
				 DEMO_WINDOW_MINS +
			 (size_t)minute];
}

/* ---- the daily traffic curve --------------------------------------------- */

/* Relative traffic at a UTC hour of the day: a peak mid-afternoon (UTC),
 * a trough at night, a shoulder around noon.  Always >= 0.05. */
static double
traffic_shape(double hour)
{
	return 1.0 + 0.8 * cos(2 * M_PI * (hour - 15) / 24) +
	       0.15 * cos(4 * M_PI * (hour - 12) / 24);
}

static void
build_curve(struct demo *d)
{
	struct rng r;
	int m;

	rng_seed(&r, d->seed, UINT64_MAX - 2);
	d->cdf[0] = 0;
	for (m = 0; m < DEMO_WINDOW_MINS; m++) {
		uint64_t mid = d->start / NS_PER_S + (uint64_t)m * 60 + 30;
		double hour = (double)(mid % 86400) / 3600.0;

		d->weight[m] = traffic_shape(hour) * (0.9 + 0.2 * rng_unif(&r));
		d->cdf[m + 1] = d->cdf[m] + d->weight[m];
	}
}

/* The time at fraction f (0..1) of the traffic of the window. */
static uint64_t
time_at(const struct demo *d, double f)
{
	double x = f * d->cdf[DEMO_WINDOW_MINS], frac;
	int lo = 0, hi = DEMO_WINDOW_MINS - 1;

	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;

		if (d->cdf[mid] <= x)
			lo = mid;
		else
			hi = mid - 1;
	}
	frac = (x - d->cdf[lo]) / d->weight[lo];
	if (frac < 0)
		frac = 0;
	if (frac > 0.999999)
		frac = 0.999999;
	return d->start + (uint64_t)((lo + frac) * (double)NS_PER_MIN);
}

/* ---- nodes and calls ----------------------------------------------------- */

/* Log-normal duration: median_ms, spread sigma; 1 us .. 60 s. */
static uint64_t
dur(struct gen *g, double median_ms, double sigma)
{
	double ns = median_ms * 1e6 * exp(sigma * rng_normal(&g->r));

	if (ns < 1000)
		ns = 1000;
	if (ns > 60e9)
		ns = 60e9;
	return (uint64_t)ns;
}

/* One network hop inside the cluster. */
static uint64_t
hop(struct gen *g)
{
	return dur(g, 0.25, 0.4);
}

static int
node_add(struct gen *g, int parent, int svc, int pod, enum op op,
	 uint64_t start)
{
	struct node *x;

	if (g->n >= GROUP_NODES_MAX) {
		g->overflow = true;
		return -1;
	}
	x = &g->nodes[g->n];
	memset(x, 0, sizeof(*x));
	x->parent = (int16_t)parent;
	x->trace = (uint8_t)g->trace;
	x->svc = (uint8_t)svc;
	x->pod = (uint8_t)pod;
	x->op = (uint8_t)op;
	x->start = x->end = start;
	x->peer = -1;
	x->model = -1;
	x->code = -1;
	x->in_tokens = x->out_tokens = -1;
	x->session = g->session_id[0] != '\0' && svc == SVC_ASSISTANT;
	rng_bytes(&g->r, x->span_id, sizeof(x->span_id));
	return g->n++;
}

static struct node *
node_at(struct gen *g, int i)
{
	return i >= 0 ? &g->nodes[i] : &g->scratch;
}

static int
pod_of(struct gen *g, int parent)
{
	return parent >= 0 ? g->nodes[parent].pod : 0;
}

static int
svc_of(struct gen *g, int parent)
{
	return parent >= 0 ? g->nodes[parent].svc : SVC_GATEWAY;
}

static void
new_trace(struct gen *g)
{
	if (g->n_traces >= GROUP_TRACES_MAX) {
		g->overflow = true;
		return;
	}
	g->trace = g->n_traces++;
	rng_bytes(&g->r, g->trace_ids[g->trace], 16);
}

/* A call from the service of node parent to service to: a client node (none
 * when parent < 0: a request from outside) and a server node (none when
 * to < 0: an external host).  t is when the client starts; c.t when the
 * server starts (its children start from there). */
struct call {
	int c, s;
	uint64_t t;
};

static struct call
call_begin(struct gen *g, int parent, int to, enum proto proto, int what,
	   uint32_t arg, uint64_t t)
{
	static const enum op client_op[N_PROTO] = {
		OP_HTTP_CLIENT, OP_GRPC_CLIENT, OP_SQL_CLIENT, OP_PRODUCER};
	static const enum op server_op[N_PROTO] = {
		OP_HTTP_SERVER, OP_GRPC_SERVER, OP_SQL_SERVER, OP_CONSUMER};
	struct call c = {-1, -1, t};

	if (parent >= 0) {
		c.c = node_add(g, parent, svc_of(g, parent), pod_of(g, parent),
			       client_op[proto], t);
		node_at(g, c.c)->peer = (int8_t)to;
		node_at(g, c.c)->what = (uint16_t)what;
		node_at(g, c.c)->arg = arg;
		c.t = t + hop(g);
	}
	if (to >= 0) {
		c.s = node_add(
			g, c.c, to,
			(int)rng_below(&g->r, (uint32_t)services[to].pods),
			server_op[proto], c.t);
		node_at(g, c.s)->what = (uint16_t)what;
		node_at(g, c.s)->arg = arg;
	}
	return c;
}

static bool
server_error(enum op op, int code)
{
	if (op == OP_HTTP_SERVER)
		return code >= 500;
	/* gRPC server errors per the semantic conventions: UNKNOWN,
	 * DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE,
	 * DATA_LOSS */
	if (op == OP_GRPC_SERVER)
		return code == 2 || code == 4 || code == 12 || code == 13 ||
		       code == 14 || code == 15;
	return code != 0;
}

/* Ends the call: the server at t with code (HTTP status, gRPC code, 0 or
 * 1 for SQL), the client a hop later.  sfail/cfail: why the server, the
 * client failed (F_NONE).  Returns when the client ends. */
static uint64_t
call_end(struct gen *g, struct call *c, uint64_t t, int code, int sfail,
	 int cfail)
{
	struct node *s = node_at(g, c->s), *cl = node_at(g, c->c);
	bool http = cl->op == OP_HTTP_CLIENT || s->op == OP_HTTP_SERVER;

	if (c->s >= 0) {
		s->end = t;
		s->code = (int16_t)code;
		if (server_error((enum op)s->op, code)) {
			s->status = 2;
			s->fail = (uint8_t)sfail;
		}
	}
	if (c->c < 0)
		return t;
	cl->end = c->s >= 0 ? t + hop(g) : t;
	cl->code = (int16_t)code;
	if (http ? code >= 400 : code != 0) {
		cl->status = 2;
		cl->fail = (uint8_t)cfail;
	}
	return cl->end;
}

static int
internal_begin(struct gen *g, int parent, enum op op, const char *name,
	       uint64_t t)
{
	int i = node_add(g, parent, svc_of(g, parent), pod_of(g, parent), op,
			 t);

	node_at(g, i)->name = name;
	return i;
}

static uint64_t
span_end(struct gen *g, int i, uint64_t t)
{
	node_at(g, i)->end = t;
	return t;
}

/* A SQL query from the service of parent, seen by postgres too.  extra_ns
 * is added to the server time (lock waits); past timeout_ns the statement
 * is cancelled (SQLSTATE 57014).  *failed says so. */
static uint64_t
query_ex(struct gen *g, int parent, int q, uint64_t t, uint64_t extra_ns,
	 uint64_t timeout_ns, int fail, bool *failed)
{
	struct call c = call_begin(g, parent, SVC_POSTGRES, PROTO_SQL, q, 0, t);
	uint64_t d = dur(g, sqls[q].median_ms, sqls[q].sigma) + extra_ns;
	bool timeout = timeout_ns > 0 && d > timeout_ns;

	if (timeout)
		d = timeout_ns;
	if (failed != NULL)
		*failed = timeout;
	return call_end(g, &c, c.t + d, timeout ? 1 : 0, timeout ? fail : 0,
			timeout ? fail : 0);
}

static uint64_t
query(struct gen *g, int parent, int q, uint64_t t)
{
	return query_ex(g, parent, q, t, 0, 0, F_NONE, NULL);
}

/* The gateway checks the caller's token with auth. */
static uint64_t
verify(struct gen *g, int parent, uint64_t t)
{
	struct call c =
		call_begin(g, parent, SVC_AUTH, PROTO_GRPC, RPC_VERIFY, 0, t);

	return call_end(g, &c, c.t + dur(g, 0.35, 0.4), 0, 0, 0);
}

/* ---- flows: one function per kind of request ---------------------------- */

/* Error burst: payments answers 503 to most charges while ledger is down,
 * 25 minutes starting 7 h 12 min before now. */
static bool
in_burst(const struct demo *d, uint64_t t)
{
	uint64_t from = d->end - (7 * 60 + 12) * NS_PER_MIN;

	return t >= from && t < from + 25 * NS_PER_MIN;
}

/* Server side of GET /inventory/items/{sku}: the slow dependency.  The
 * stock query waits on row locks now and then (a heavy tail up to its 5 s
 * statement timeout).  Returns the end; *code the status. */
static uint64_t
handle_item(struct gen *g, int s, uint64_t t, int *code, int *fail)
{
	uint64_t extra = 0;
	bool timeout = false;

	t += dur(g, 0.1, 0.3);
	t = query(g, s, Q_PRODUCT, t);
	*code = 200;
	*fail = F_NONE;
	if (rng_chance(&g->r, 0.03)) {
		*code = 404;
		return t + dur(g, 0.05, 0.3);
	}
	if (rng_chance(&g->r, 0.07))
		extra = dur(g, 650, 0.9);
	t = query_ex(g, s, Q_STOCK, t, extra, 5 * NS_PER_S, F_STOCK_TIMEOUT,
		     &timeout);
	if (timeout) {
		*code = 500;
		*fail = F_STOCK_QUERY;
	}
	return t + dur(g, 0.1, 0.3);
}

static uint64_t
handle_search(struct gen *g, int s, uint64_t t, int *code, int *fail)
{
	int i;
	bool timeout = false;

	i = internal_begin(g, s, OP_INTERNAL, "parse query", t);
	t = span_end(g, i, t + dur(g, 0.6, 0.4));
	t = query_ex(g, s, Q_SEARCH, t,
		     rng_chance(&g->r, 0.01) ? dur(g, 900, 0.8) : 0,
		     2 * NS_PER_S, F_SEARCH_TIMEOUT, &timeout);
	*code = 200;
	*fail = F_NONE;
	if (timeout) {
		*code = 500;
		*fail = F_SEARCH_QUERY;
		return t + dur(g, 0.5, 0.3);
	}
	i = internal_begin(g, s, OP_INTERNAL, "rank results", t);
	t = span_end(g, i, t + dur(g, 12, 0.6));
	return t + dur(g, 0.4, 0.3);
}

static uint64_t
handle_order(struct gen *g, int s, uint64_t t, int *code)
{
	t = query(g, s, Q_ORDER_GET, t + dur(g, 0.2, 0.3));
	*code = rng_chance(&g->r, 0.03) ? 404 : 200;
	return t + dur(g, 0.3, 0.4);
}

/* The gateway's answer to an upstream status. */
static int
gw_code(int code)
{
	return code >= 500 ? 502 : code;
}

/* Gateway root span, the call to service to, the gateway's answer. */
static void
flow_simple(struct gen *g, uint64_t t, int gw_route, int to, int route,
	    uint32_t arg, bool auth)
{
	struct call gw =
		call_begin(g, -1, SVC_GATEWAY, PROTO_HTTP, gw_route, arg, t);
	struct call up;
	uint64_t u = gw.t + dur(g, 0.15, 0.4);
	int code = 200, fail = F_NONE;

	if (auth)
		u = verify(g, gw.s, u);
	up = call_begin(g, gw.s, to, PROTO_HTTP, route, arg, u);
	switch (route) {
	case R_INV_ITEM: u = handle_item(g, up.s, up.t, &code, &fail); break;
	case R_SEARCH: u = handle_search(g, up.s, up.t, &code, &fail); break;
	case R_ORDER: u = handle_order(g, up.s, up.t, &code); break;
	case R_CART_GET:
		u = query(g, up.s, Q_CART_GET, up.t + dur(g, 0.3, 0.4));
		u += dur(g, 0.4, 0.4);
		break;
	default: u = up.t; break;
	}
	u = call_end(g, &up, u, code, fail, F_NONE);
	call_end(g, &gw, u + dur(g, 0.1, 0.3), gw_code(code),
		 code >= 500 ? F_GW_UPSTREAM : F_NONE, F_NONE);
}

static void
flow_product(struct gen *g, uint64_t t)
{
	flow_simple(g, t, R_GW_PRODUCT, SVC_INVENTORY, R_INV_ITEM,
		    1 + rng_below(&g->r, 20000), false);
}

static void
flow_search(struct gen *g, uint64_t t)
{
	flow_simple(g, t, R_GW_SEARCH, SVC_SEARCH, R_SEARCH, 0, false);
}

static void
flow_cart(struct gen *g, uint64_t t)
{
	flow_simple(g, t, R_GW_CART, SVC_CART, R_CART_GET,
		    1 + rng_below(&g->r, 50000), true);
}

static void
flow_order(struct gen *g, uint64_t t)
{
	flow_simple(g, t, R_GW_ORDER, SVC_CHECKOUT, R_ORDER,
		    100000 + rng_below(&g->r, 900000), true);
}

static void
flow_cart_add(struct gen *g, uint64_t t)
{
	uint32_t user = 1 + rng_below(&g->r, 50000);
	struct call gw =
		call_begin(g, -1, SVC_GATEWAY, PROTO_HTTP, R_GW_CART_ADD, 0, t);
	struct call cart, inv;
	uint64_t u = verify(g, gw.s, gw.t + dur(g, 0.15, 0.4));
	int code = 201, grpc = 0;

	cart = call_begin(g, gw.s, SVC_CART, PROTO_HTTP, R_CART_ADD, user, u);
	inv = call_begin(g, cart.s, SVC_INVENTORY, PROTO_GRPC, RPC_CHECK_STOCK,
			 0, cart.t + dur(g, 0.5, 0.5));
	u = query(g, inv.s, Q_STOCK, inv.t + dur(g, 0.1, 0.3));
	if (rng_chance(&g->r, 0.02))
		grpc = 9; /* FAILED_PRECONDITION: out of stock */
	u = call_end(g, &inv, u + dur(g, 0.1, 0.3), grpc, F_NONE,
		     grpc ? F_OUT_OF_STOCK : F_NONE);
	if (grpc == 0)
		u = query(g, cart.s, Q_CART_ADD, u + dur(g, 0.2, 0.4));
	else
		code = 409;
	u = call_end(g, &cart, u + dur(g, 0.3, 0.4), code, F_NONE, F_NONE);
	call_end(g, &gw, u + dur(g, 0.1, 0.3), gw_code(code), F_NONE, F_NONE);
}

/* payments: fraud score, then (unless declined) the payment row and the
 * ledger entry.  During the burst, ledger refuses connections. */
static uint64_t
handle_charge(struct demo *d, struct gen *g, int s, uint64_t t, int *code,
	      int *fail)
{
	struct call c;
	uint64_t u;

	*code = 201;
	*fail = F_NONE;
	c = call_begin(g, s, SVC_FRAUD, PROTO_GRPC, RPC_SCORE, 0,
		       t + dur(g, 0.2, 0.4));
	u = call_end(g, &c, c.t + dur(g, 22, 0.45), 0, 0, 0);
	if (rng_chance(&g->r, 0.015)) {
		*code = 402; /* declined: a 4xx, not a server error */
		return u + dur(g, 0.3, 0.4);
	}
	if (in_burst(d, t) && rng_chance(&g->r, 0.6)) {
		c = call_begin(g, s, -1, PROTO_GRPC, RPC_RECORD, 0, u);
		node_at(g, c.c)->peer = SVC_LEDGER;
		u = call_end(g, &c, u + dur(g, 1.5, 0.5), 14, F_NONE,
			     F_LEDGER_CLIENT);
		*code = 503;
		*fail = F_LEDGER_DOWN;
		return u + dur(g, 0.2, 0.3);
	}
	u = query(g, s, Q_PAYMENT_INSERT, u + dur(g, 0.2, 0.3));
	c = call_begin(g, s, SVC_LEDGER, PROTO_GRPC, RPC_RECORD, 0, u);
	u = query(g, c.s, Q_LEDGER_INSERT, c.t + dur(g, 0.8, 0.5));
	u = call_end(g, &c, u + dur(g, 0.6, 0.5), 0, 0, 0);
	return u + dur(g, 0.3, 0.4);
}

/* notifications consumes the order event a little later and mails. */
static void
notify(struct gen *g, int parent, uint64_t t)
{
	int p = node_add(g, parent, SVC_CHECKOUT, pod_of(g, parent),
			 OP_PRODUCER, t);
	int c, i;
	struct call mail;
	uint64_t u;

	node_at(g, p)->peer = SVC_NOTIFICATIONS;
	u = span_end(g, p, t + dur(g, 1.8, 0.5));
	c = node_add(g, p, SVC_NOTIFICATIONS,
		     (int)rng_below(&g->r,
				    (uint32_t)services[SVC_NOTIFICATIONS].pods),
		     OP_CONSUMER, u + dur(g, 35, 0.9));
	u = query(g, c, Q_TEMPLATE, node_at(g, c)->start + dur(g, 0.3, 0.4));
	i = internal_begin(g, c, OP_INTERNAL, "render email", u);
	u = span_end(g, i, u + dur(g, 4, 0.5));
	mail = call_begin(g, c, -1, PROTO_HTTP, R_SENDGRID, 0, u);
	if (rng_chance(&g->r, 0.004))
		u = call_end(g, &mail, u + dur(g, 30, 0.5), 503, F_NONE,
			     F_EMAIL);
	else
		u = call_end(g, &mail, u + dur(g, 140, 0.45), 202, F_NONE,
			     F_NONE);
	node_at(g, c)->code = 0;
	span_end(g, c, u + dur(g, 0.3, 0.4));
}

static void
flow_checkout(struct demo *d, struct gen *g, uint64_t t)
{
	uint32_t user = 1 + rng_below(&g->r, 50000);
	struct call gw =
		call_begin(g, -1, SVC_GATEWAY, PROTO_HTTP, R_GW_CHECKOUT, 0, t);
	struct call co, c;
	uint64_t u = verify(g, gw.s, gw.t + dur(g, 0.15, 0.4));
	int code, fail, v, co_code = 201, co_fail = F_NONE;

	co = call_begin(g, gw.s, SVC_CHECKOUT, PROTO_HTTP, R_CHECKOUT, 0, u);
	v = internal_begin(g, co.s, OP_INTERNAL, "validate cart",
			   co.t + dur(g, 0.4, 0.4));
	c = call_begin(g, v, SVC_CART, PROTO_HTTP, R_CART_GET, user,
		       node_at(g, v)->start + dur(g, 0.2, 0.3));
	u = query(g, c.s, Q_CART_GET, c.t + dur(g, 0.3, 0.4));
	u = call_end(g, &c, u + dur(g, 0.3, 0.4), 200, 0, 0);
	u = span_end(g, v, u + dur(g, 0.8, 0.5));
	c = call_begin(g, co.s, SVC_INVENTORY, PROTO_GRPC, RPC_RESERVE, 0, u);
	u = query(g, c.s, Q_RESERVE, c.t + dur(g, 0.1, 0.3));
	u = call_end(g, &c, u + dur(g, 0.1, 0.3), 0, 0, 0);
	c = call_begin(g, co.s, SVC_PAYMENTS, PROTO_HTTP, R_PAY_CHARGE, 0, u);
	u = handle_charge(d, g, c.s, c.t, &code, &fail);
	u = call_end(g, &c, u, code, fail, F_NONE);
	if (code == 201) {
		u = query(g, co.s, Q_ORDER_INSERT, u + dur(g, 0.3, 0.4));
		notify(g, co.s, u + dur(g, 0.2, 0.3));
		u += dur(g, 2.5, 0.4);
	} else if (code >= 500) {
		co_code = 502;
		co_fail = F_PAY_UPSTREAM;
	} else {
		co_code = code;
	}
	u = call_end(g, &co, u + dur(g, 0.6, 0.5), co_code, co_fail, F_NONE);
	call_end(g, &gw, u + dur(g, 0.1, 0.3), gw_code(co_code),
		 co_code >= 500 ? F_GW_UPSTREAM : F_NONE, F_NONE);
}

static void
flow_login(struct gen *g, uint64_t t)
{
	struct call gw =
		call_begin(g, -1, SVC_GATEWAY, PROTO_HTTP, R_GW_LOGIN, 0, t);
	struct call a = call_begin(g, gw.s, SVC_AUTH, PROTO_GRPC, RPC_LOGIN, 0,
				   gw.t + dur(g, 0.2, 0.4));
	uint64_t u = query(g, a.s, Q_USER, a.t + dur(g, 0.1, 0.3));
	int grpc = 0;

	u += dur(g, 48, 0.15); /* bcrypt */
	if (rng_chance(&g->r, 0.06))
		grpc = 16; /* UNAUTHENTICATED */
	else
		u = query(g, a.s, Q_SESSION_INSERT, u + dur(g, 0.1, 0.3));
	u = call_end(g, &a, u + dur(g, 0.1, 0.3), grpc, F_NONE,
		     grpc ? F_BAD_PASSWORD : F_NONE);
	call_end(g, &gw, u + dur(g, 0.1, 0.3), grpc ? 401 : 200, F_NONE,
		 F_NONE);
}

/* A background job in ledger: a root INTERNAL span, no request. */
static void
flow_reconcile(struct gen *g, uint64_t t)
{
	int root = node_add(
		g, -1, SVC_LEDGER,
		(int)rng_below(&g->r, (uint32_t)services[SVC_LEDGER].pods),
		OP_INTERNAL, t);
	uint64_t u;
	int k, n = 1 + (int)rng_below(&g->r, 3);

	node_at(g, root)->name = "reconcile ledger";
	u = query(g, root, Q_LEDGER_SCAN, t + dur(g, 0.5, 0.4));
	for (k = 0; k < n; k++)
		u = query(g, root, Q_LEDGER_UPDATE, u + dur(g, 3, 0.5));
	span_end(g, root, u + dur(g, 1, 0.4));
}

/* One LLM call (retried once after a 429 now and then). */
static uint64_t
chat(struct gen *g, int parent, int model, int turn, int round, bool tools,
     uint64_t t)
{
	const struct model *m = &models[model];
	int i, out;

	if (rng_chance(&g->r, 0.02)) {
		i = internal_begin(g, parent, OP_CHAT, NULL, t);
		node_at(g, i)->model = (int8_t)model;
		node_at(g, i)->status = 2;
		node_at(g, i)->fail = F_RATE_LIMIT;
		node_at(g, i)->finish = 2;
		node_at(g, i)->code = 429;
		t = span_end(g, i, t + dur(g, 180, 0.4));
		t += dur(g, 1000, 0.2); /* Retry-After */
	}
	i = internal_begin(g, parent, OP_CHAT, NULL, t);
	out = tools ? 18 + (int)rng_below(&g->r, 60)
		    : (int)(40 + 260 * exp(0.6 * rng_normal(&g->r)));
	node_at(g, i)->model = (int8_t)model;
	node_at(g, i)->finish = tools ? 1 : 0;
	node_at(g, i)->in_tokens =
		(int32_t)(700 + 520 * turn + 380 * round +
			  400 * exp(0.5 * rng_normal(&g->r)));
	node_at(g, i)->out_tokens = out;
	return span_end(
		g, i,
		t + dur(g, m->ttft_ms, 0.35) +
			(uint64_t)(out * m->ms_per_token * (double)NS_PER_MS));
}

/* One tool call of the agent: the tool span and the request it makes. */
static uint64_t
tool(struct gen *g, int parent, int which, int fast, int turn, uint64_t t)
{
	int i = internal_begin(g, parent, OP_TOOL, NULL, t);
	struct call c;
	uint64_t u = t + dur(g, 0.3, 0.4);
	int code = 200, fail = F_NONE;

	node_at(g, i)->what = (uint16_t)which;
	switch (which) {
	case TOOL_SEARCH:
		c = call_begin(g, i, SVC_SEARCH, PROTO_HTTP, R_SEARCH, 0, u);
		u = handle_search(g, c.s, c.t, &code, &fail);
		u = call_end(g, &c, u, code, fail, F_NONE);
		break;
	case TOOL_STOCK:
		c = call_begin(g, i, SVC_INVENTORY, PROTO_HTTP, R_INV_ITEM,
			       1 + rng_below(&g->r, 20000), u);
		u = handle_item(g, c.s, c.t, &code, &fail);
		u = call_end(g, &c, u, code, fail, F_NONE);
		break;
	default: {
		/* a sub-agent looks the order up */
		int a = internal_begin(g, i, OP_AGENT, NULL, u);

		node_at(g, a)->what = AGENT_ORDERS;
		u = chat(g, a, fast, turn, 0, true, u + dur(g, 0.5, 0.4));
		c = call_begin(g, a, SVC_CHECKOUT, PROTO_HTTP, R_ORDER,
			       100000 + rng_below(&g->r, 900000), u);
		u = handle_order(g, c.s, c.t, &code);
		u = call_end(g, &c, u, code, F_NONE, F_NONE);
		u = chat(g, a, fast, turn, 1, false, u + dur(g, 0.5, 0.4));
		u = span_end(g, a, u + dur(g, 0.3, 0.4));
		break;
	}
	}
	return span_end(g, i, u + dur(g, 0.2, 0.4));
}

/* An assistant session: 2 to 5 turns (one trace each), each an agent run
 * of a few LLM calls and tool calls, a pause for the user in between. */
static void
flow_session(struct gen *g, uint64_t t)
{
	static const int pairs[][2] = {{M_GPT4O, M_GPT4O_MINI},
				       {M_GPT4O, M_GPT41_MINI},
				       {M_SONNET, M_HAIKU},
				       {M_GEMINI_FLASH, M_GEMINI_LITE}};
	static const int pair_weight[] = {35, 15, 32, 18};
	uint8_t raw[8];
	int p = 0, turns = 2 + (int)rng_below(&g->r, 4), k, x;
	uint32_t w = rng_below(&g->r, 100);

	while (w >= (uint32_t)pair_weight[p]) {
		w -= (uint32_t)pair_weight[p];
		p++;
	}
	rng_bytes(&g->r, raw, sizeof(raw));
	memcpy(g->session_id, "sess_", 5);
	hex_encode(raw, sizeof(raw), g->session_id + 5);
	for (k = 0; k < turns; k++) {
		struct call gw, as;
		uint64_t u;
		int agent, rounds = (int)rng_below(&g->r, 3), r;

		if (k > 0)
			new_trace(g);
		gw = call_begin(g, -1, SVC_GATEWAY, PROTO_HTTP, R_GW_ASSIST, 0,
				t);
		u = verify(g, gw.s, gw.t + dur(g, 0.15, 0.4));
		as = call_begin(g, gw.s, SVC_ASSISTANT, PROTO_HTTP, R_ASSIST, 0,
				u);
		agent = internal_begin(g, as.s, OP_AGENT, NULL,
				       as.t + dur(g, 1.5, 0.5));
		node_at(g, agent)->what = AGENT_SHOPPING;
		u = node_at(g, agent)->start;
		for (r = 0; r < rounds; r++) {
			u = chat(g, agent, pairs[p][0], k, r, true,
				 u + dur(g, 0.4, 0.4));
			x = (int)rng_below(&g->r, 3);
			u = tool(g, agent, x, pairs[p][1], k,
				 u + dur(g, 0.2, 0.4));
		}
		u = chat(g, agent, pairs[p][0], k, rounds, false,
			 u + dur(g, 0.4, 0.4));
		u = span_end(g, agent, u + dur(g, 0.5, 0.4));
		u = call_end(g, &as, u + dur(g, 0.8, 0.4), 200, 0, 0);
		u = call_end(g, &gw, u + dur(g, 0.1, 0.3), 200, 0, 0);
		t = u + dur(g, 25000, 0.6); /* the user reads and types */
	}
}

/* Generates group number index into d->gen (nodes only). */
static void
gen_group(struct demo *d, uint64_t index)
{
	struct gen *g = &d->gen;
	double f;
	uint64_t t, last = 0, first = UINT64_MAX;
	uint32_t w;
	int i;

	rng_seed(&g->r, d->seed, index);
	g->n = 0;
	g->n_traces = 0;
	g->overflow = false;
	g->session_id[0] = '\0';
	new_trace(g);
	/* where this group's rows fall on the traffic curve, jittered
	 * within the next dozen rows' share */
	f = ((double)d->emitted + 12.0 * rng_unif(&g->r)) / (double)d->spans;
	if (f > 1)
		f = 1;
	t = time_at(d, f);
	w = rng_below(&g->r, 1000);
	/* per mille of the groups; a session is a dozen times the spans of
	 * a page view */
	if (w < 330)
		flow_product(g, t);
	else if (w < 450)
		flow_search(g, t);
	else if (w < 570)
		flow_cart(g, t);
	else if (w < 670)
		flow_cart_add(g, t);
	else if (w < 760)
		flow_checkout(d, g, t);
	else if (w < 840)
		flow_order(g, t);
	else if (w < 958)
		flow_login(g, t);
	else if (w < 988)
		flow_session(g, t);
	else
		flow_reconcile(g, t);
	/* keep the group inside the window: sessions run for minutes */
	for (i = 0; i < g->n; i++) {
		if (g->nodes[i].end > last)
			last = g->nodes[i].end;
		if (g->nodes[i].start < first)
			first = g->nodes[i].start;
	}
	if (last > d->end) {
		uint64_t shift = last - d->end;

		if (first - d->start < shift)
			shift = first - d->start;
		for (i = 0; i < g->n; i++) {
			g->nodes[i].start -= shift;
			g->nodes[i].end -= shift;
		}
	}
}

/* ---- rows: text ---------------------------------------------------------- */

/* A writer of one string into a buffer's text; full when it would pass
 * the end (the string is then abandoned). */
struct tw {
	char *start, *p, *end;
	bool full;
	int items;
};

static void
tw_begin(struct tw *w, struct demo_buf *buf)
{
	w->start = w->p = buf->text + buf->text_len;
	w->end = buf->text + buf->text_cap - 1; /* room for the NUL */
	w->full = false;
	w->items = 0;
}

static const char *
tw_done(struct tw *w, struct demo_buf *buf)
{
	if (w->full)
		return NULL;
	*w->p++ = '\0';
	buf->text_len = (size_t)(w->p - buf->text);
	return w->start;
}

static void
tw_mem(struct tw *w, const char *s, size_t n)
{
	if (w->full || (size_t)(w->end - w->p) < n) {
		w->full = true;
		return;
	}
	memcpy(w->p, s, n);
	w->p += n;
}

static void
tw_s(struct tw *w, const char *s)
{
	tw_mem(w, s, strlen(s));
}

static void
tw_c(struct tw *w, char c)
{
	tw_mem(w, &c, 1);
}

static void
tw_u64(struct tw *w, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do {
		tmp[sizeof(tmp) - 1 - n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v > 0);
	tw_mem(w, tmp + sizeof(tmp) - n, (size_t)n);
}

static void
tw_i64(struct tw *w, int64_t v)
{
	if (v < 0) {
		tw_c(w, '-');
		tw_u64(w, (uint64_t)0 - (uint64_t)v);
	} else {
		tw_u64(w, (uint64_t)v);
	}
}

/* A JSON string: the text made here is ASCII, escaped all the same. */
static void
tw_jstr(struct tw *w, const char *s)
{
	const char *run = s;

	tw_c(w, '"');
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c != '"' && c != '\\')
			continue;
		tw_mem(w, run, (size_t)(s - run));
		if (c == '"' || c == '\\') {
			tw_c(w, '\\');
			tw_c(w, (char)c);
		} else {
			tw_s(w, "\\u00");
			tw_c(w, "0123456789abcdef"[c >> 4]);
			tw_c(w, "0123456789abcdef"[c & 15]);
		}
		run = s + 1;
	}
	tw_mem(w, run, (size_t)(s - run));
	tw_c(w, '"');
}

static void
tw_key(struct tw *w, const char *k)
{
	tw_c(w, w->items++ ? ',' : '{');
	tw_jstr(w, k);
	tw_c(w, ':');
}

static void
kv_s(struct tw *w, const char *k, const char *v)
{
	if (v == NULL)
		return;
	tw_key(w, k);
	tw_jstr(w, v);
}

static void
kv_i(struct tw *w, const char *k, int64_t v)
{
	tw_key(w, k);
	tw_i64(w, v);
}

static void
tw_close(struct tw *w)
{
	if (w->items == 0)
		tw_c(w, '{');
	tw_c(w, '}');
}

static void
tw_hex(struct tw *w, const uint8_t *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		tw_c(w, "0123456789abcdef"[p[i] >> 4]);
		tw_c(w, "0123456789abcdef"[p[i] & 15]);
	}
}

/* The concrete path of a route: the braced part replaced by the node's
 * argument. */
static void
tw_path(struct tw *w, const struct route *r, uint32_t arg, const char *session)
{
	const char *open = strchr(r->route, '{'), *close;

	if (open == NULL || r->arg == ARG_NONE) {
		tw_s(w, r->route);
		return;
	}
	close = strchr(open, '}');
	tw_mem(w, r->route, (size_t)(open - r->route));
	switch (r->arg) {
	case ARG_SKU: {
		char sku[16] = "SKU-00000";
		uint32_t v = arg % 100000;
		int i;

		for (i = 8; i >= 4; i--, v /= 10)
			sku[i] = (char)('0' + v % 10);
		tw_s(w, sku);
		break;
	}
	case ARG_USER:
		tw_c(w, 'u');
		tw_u64(w, arg);
		break;
	case ARG_SESSION: tw_s(w, session); break;
	default: tw_u64(w, arg); break;
	}
	tw_s(w, close + 1);
}

/* ---- rows: spans --------------------------------------------------------- */

static bool
is_server(enum op op)
{
	return op == OP_HTTP_SERVER || op == OP_GRPC_SERVER ||
	       op == OP_SQL_SERVER || op == OP_CONSUMER;
}

/* eBPF sees requests on the wire: HTTP, gRPC and SQL, not what happens
 * inside a process. */
static bool
seen_by(const struct node *x, enum otlp_source src)
{
	if (!(services[x->svc].seen & (1u << src)))
		return false;
	if (src == OTLP_SOURCE_OTLP)
		return true;
	return x->op <= OP_SQL_CLIENT;
}

static bool
has_row(const struct node *x)
{
	return seen_by(x, OTLP_SOURCE_OTLP) || seen_by(x, OTLP_SOURCE_EBPF);
}

static int
span_kind(enum op op)
{
	switch (op) {
	case OP_HTTP_SERVER:
	case OP_GRPC_SERVER:
	case OP_SQL_SERVER: return 2;
	case OP_HTTP_CLIENT:
	case OP_GRPC_CLIENT:
	case OP_SQL_CLIENT:
	case OP_CHAT: return 3;
	case OP_PRODUCER: return 4;
	case OP_CONSUMER: return 5;
	default: return 1;
	}
}

static const char *
scope_of(const struct node *x, enum otlp_source src, const char **version)
{
	static const char *const http_s[] = {
		"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp",
		"io.opentelemetry.spring-webmvc-6.0",
		"opentelemetry.instrumentation.fastapi",
		"@opentelemetry/instrumentation-http"};
	static const char *const http_c[] = {
		"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp",
		"io.opentelemetry.java-http-client",
		"opentelemetry.instrumentation.httpx",
		"@opentelemetry/instrumentation-http"};
	static const char *const grpc[] = {
		"go.opentelemetry.io/contrib/instrumentation/google.golang.org/"
		"grpc/otelgrpc",
		"io.opentelemetry.grpc-1.6",
		"opentelemetry.instrumentation.grpc",
		"@opentelemetry/instrumentation-grpc"};
	static const char *const sql[] = {
		"github.com/XSAM/otelsql", "io.opentelemetry.jdbc",
		"opentelemetry.instrumentation.psycopg",
		"@opentelemetry/instrumentation-pg"};
	static const char *const versions[] = {"0.60.0", "2.15.0-alpha",
					       "0.54b0", "0.200.0"};
	const struct service *sv = &services[x->svc];
	int l = sv->lang > LANG_NODE ? LANG_GO : (int)sv->lang;

	if (src == OTLP_SOURCE_EBPF) {
		*version = "2.1.0";
		return "github.com/grafana/beyla";
	}
	*version = versions[l];
	switch ((enum op)x->op) {
	case OP_HTTP_SERVER: return http_s[l];
	case OP_HTTP_CLIENT: return http_c[l];
	case OP_GRPC_SERVER:
	case OP_GRPC_CLIENT: return grpc[l];
	case OP_SQL_SERVER:
	case OP_SQL_CLIENT: return sql[l];
	case OP_PRODUCER:
		*version = "2.15.0-alpha";
		return "io.opentelemetry.kafka-clients-2.6";
	case OP_CONSUMER:
		*version = "0.9.0";
		return "@opentelemetry/instrumentation-kafkajs";
	case OP_CHAT: *version = "0.3b0"; return models[x->model].scope;
	case OP_AGENT:
	case OP_TOOL: *version = sv->version; return "assistant.agent";
	default: *version = sv->version; return sv->name;
	}
}

/* Java services use the older semantic-convention names (http.method,
 * db.statement, ...), as their agents still do by default; the rest the
 * current ones.  The extracted columns are the same either way. */
static bool
old_names(const struct node *x, enum otlp_source src)
{
	return src == OTLP_SOURCE_OTLP && services[x->svc].lang == LANG_JAVA;
}

static void
attrs_http(struct demo *d, const struct gen *g, const struct node *x,
	   enum otlp_source src, struct tw *w, const char *session,
	   const char **route_out)
{
	static const char *const agents_ua[] = {
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) "
		"AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 "
		"Safari/605.1.15",
		"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
		"(KHTML, like Gecko) Chrome/126.0.0.0 Safari/537.36",
		"ShopApp/5.2.1 (iPhone; iOS 17.5; Scale/3.00)"};
	const struct route *r = &routes[x->what];
	bool old = old_names(x, src), full = src == OTLP_SOURCE_OTLP;
	const char *host = r->host != NULL	     ? r->host
			   : x->op == OP_HTTP_SERVER ? d->dns[x->svc]
						     : d->dns[x->peer];
	int port = r->host != NULL ? 443 : 8080;

	kv_s(w, old ? "http.method" : "http.request.method", r->method);
	if (x->op == OP_HTTP_SERVER) {
		kv_s(w, "http.route", r->route);
		tw_key(w, old ? "http.target" : "url.path");
		tw_c(w, '"');
		tw_path(w, r, x->arg, session);
		tw_c(w, '"');
		if (full)
			kv_s(w, old ? "http.scheme" : "url.scheme", "http");
		kv_s(w, old ? "net.host.name" : "server.address", host);
		kv_i(w, old ? "net.host.port" : "server.port", port);
		tw_key(w, old ? "net.sock.peer.addr" : "client.address");
		if (x->parent >= 0) {
			const struct node *c = &g->nodes[x->parent];

			tw_jstr(w, d->ip[c->svc][c->pod]);
		} else {
			tw_s(w, "\"203.0.113.");
			tw_u64(w, 1 + x->span_id[0] % 254);
			tw_c(w, '"');
			if (full)
				kv_s(w,
				     old ? "http.user_agent"
					 : "user_agent.original",
				     agents_ua[x->span_id[1] % 3]);
		}
		*route_out = r->route;
	} else {
		tw_key(w, old ? "http.url" : "url.full");
		tw_c(w, '"');
		tw_s(w, r->host != NULL ? "https://" : "http://");
		tw_s(w, host);
		if (r->host == NULL)
			tw_s(w, ":8080");
		tw_path(w, r, x->arg, session);
		tw_c(w, '"');
		kv_s(w, old ? "net.peer.name" : "server.address", host);
		kv_i(w, old ? "net.peer.port" : "server.port", port);
		*route_out = NULL; /* the caller writes the path */
	}
	if (x->code >= 0)
		kv_i(w, old ? "http.status_code" : "http.response.status_code",
		     x->code);
	if (full) {
		kv_s(w, old ? "http.flavor" : "network.protocol.version",
		     "1.1");
		if (x->code >= 500 ||
		    (x->op == OP_HTTP_CLIENT && x->code >= 400)) {
			tw_key(w, "error.type");
			tw_c(w, '"');
			tw_u64(w, (uint64_t)x->code);
			tw_c(w, '"');
		}
	}
}

static void
attrs_grpc(struct demo *d, const struct node *x, enum otlp_source src,
	   struct tw *w)
{
	const struct rpc *r = &rpcs[x->what];
	bool old = old_names(x, src);
	int peer = x->op == OP_GRPC_SERVER ? x->svc : x->peer;

	kv_s(w, "rpc.system", "grpc");
	kv_s(w, "rpc.service", r->service);
	kv_s(w, "rpc.method", r->method);
	if (x->code >= 0)
		kv_i(w, "rpc.grpc.status_code", x->code);
	kv_s(w, old ? "net.peer.name" : "server.address", d->dns[peer]);
	kv_i(w, old ? "net.peer.port" : "server.port", 9090);
	if (src == OTLP_SOURCE_OTLP && x->code > 0 &&
	    (x->op == OP_GRPC_CLIENT || x->status == 2))
		kv_s(w, "error.type", otlp_grpc_code_name(x->code));
}

static void
attrs_sql(struct demo *d, const struct node *x, enum otlp_source src,
	  struct tw *w)
{
	const struct sql *q = &sqls[x->what];
	bool old = old_names(x, src), full = src == OTLP_SOURCE_OTLP;

	kv_s(w, old ? "db.system" : "db.system.name", "postgresql");
	kv_s(w, old ? "db.operation" : "db.operation.name", q->op);
	kv_s(w, old ? "db.sql.table" : "db.collection.name", q->table);
	kv_s(w, old ? "db.statement" : "db.query.text", q->text);
	if (full)
		kv_s(w, old ? "db.name" : "db.namespace", services[x->svc].ns);
	kv_s(w, old ? "net.peer.name" : "server.address", d->dns[SVC_POSTGRES]);
	kv_i(w, old ? "net.peer.port" : "server.port", 5432);
	if (x->status == 2)
		kv_s(w, "error.type", failures[x->fail].type);
}

static void
attrs_genai(const struct node *x, struct tw *w)
{
	static const char *const finish[] = {"[\"stop\"]", "[\"tool_calls\"]",
					     NULL};
	const struct model *m = &models[x->model];

	kv_s(w, "gen_ai.operation.name", "chat");
	kv_s(w, "gen_ai.provider.name", m->provider);
	/* the attribute before semantic conventions 1.37 */
	kv_s(w, "gen_ai.system", m->provider);
	kv_s(w, "gen_ai.request.model", m->request);
	tw_key(w, "gen_ai.request.temperature");
	tw_s(w, "0.2");
	kv_i(w, "gen_ai.request.max_tokens", 1024);
	kv_s(w, "server.address", m->host);
	kv_i(w, "server.port", 443);
	if (x->status == 2) {
		kv_s(w, "error.type", failures[x->fail].type);
		return;
	}
	kv_s(w, "gen_ai.response.model", m->response);
	tw_key(w, "gen_ai.response.id");
	tw_c(w, '"');
	tw_s(w, m->provider[0] == 'o' ? "chatcmpl-" : "msg_");
	tw_hex(w, x->span_id, sizeof(x->span_id));
	tw_c(w, '"');
	tw_key(w, "gen_ai.response.finish_reasons");
	tw_s(w, finish[x->finish]);
	kv_i(w, "gen_ai.usage.input_tokens", x->in_tokens);
	kv_i(w, "gen_ai.usage.output_tokens", x->out_tokens);
}

/* The text of one row: attributes and events. */
static void
span_text(struct demo *d, struct demo_buf *buf, const struct node *x,
	  enum otlp_source src, const char *session, struct otlp_span *s,
	  bool *full)
{
	struct tw w;
	const char *route = NULL;

	*full = false;
	tw_begin(&w, buf);
	switch ((enum op)x->op) {
	case OP_HTTP_SERVER:
	case OP_HTTP_CLIENT:
		attrs_http(d, &d->gen, x, src, &w, session, &route);
		break;
	case OP_GRPC_SERVER:
	case OP_GRPC_CLIENT: attrs_grpc(d, x, src, &w); break;
	case OP_SQL_SERVER:
	case OP_SQL_CLIENT: attrs_sql(d, x, src, &w); break;
	case OP_PRODUCER:
	case OP_CONSUMER:
		kv_s(&w, "messaging.system", "kafka");
		kv_s(&w, "messaging.destination.name", "orders");
		kv_s(&w, "messaging.operation.type",
		     x->op == OP_PRODUCER ? "send" : "process");
		kv_s(&w, "messaging.consumer.group.name",
		     x->op == OP_CONSUMER ? "notifications" : NULL);
		kv_s(&w, "server.address", "kafka.platform.svc.cluster.local");
		kv_i(&w, "server.port", 9092);
		break;
	case OP_CHAT: attrs_genai(x, &w); break;
	case OP_AGENT:
		kv_s(&w, "gen_ai.operation.name", "invoke_agent");
		kv_s(&w, "gen_ai.agent.name", agents[x->what].name);
		kv_s(&w, "gen_ai.agent.id", agents[x->what].id);
		break;
	case OP_TOOL:
		kv_s(&w, "gen_ai.operation.name", "execute_tool");
		kv_s(&w, "gen_ai.tool.name", tool_names[x->what]);
		kv_s(&w, "gen_ai.tool.type", "function");
		tw_key(&w, "gen_ai.tool.call.id");
		tw_s(&w, "\"call_");
		tw_hex(&w, x->span_id, 6);
		tw_c(&w, '"');
		break;
	case OP_INTERNAL: kv_s(&w, "code.function.name", x->name); break;
	}
	if (x->session)
		kv_s(&w, "session.id", session);
	tw_close(&w);
	*full |= (s->attributes_json = tw_done(&w, buf)) == NULL;
	s->http_route = route;
	if (x->op == OP_HTTP_CLIENT) {
		/* what lib/otlp makes of url.full: its path */
		tw_begin(&w, buf);
		tw_path(&w, &routes[x->what], x->arg, session);
		*full |= (s->http_route = tw_done(&w, buf)) == NULL;
	}
	s->events_json = NULL;
	if (src == OTLP_SOURCE_OTLP && x->status == 2 &&
	    failures[x->fail].exception) {
		tw_begin(&w, buf);
		tw_s(&w, "[{\"time_unix_nano\":\"");
		tw_u64(&w, x->end - (x->end - x->start) / 50);
		tw_s(&w, "\",\"name\":\"exception\",\"attributes\":");
		w.items = 0;
		kv_s(&w, "exception.type", failures[x->fail].type);
		kv_s(&w, "exception.message", failures[x->fail].message);
		tw_close(&w);
		tw_s(&w, "}]");
		*full |= (s->events_json = tw_done(&w, buf)) == NULL;
	}
}

/* The parent a row names: the parent node, skipping nodes without rows,
 * and, for eBPF rows, spans inside the same process that eBPF cannot see
 * (Beyla parents a client call on the server span it runs under). */
static int
row_parent(const struct gen *g, int i, enum otlp_source src)
{
	int p = g->nodes[i].parent;

	while (p >= 0) {
		const struct node *x = &g->nodes[p];

		if (has_row(x) &&
		    !(src == OTLP_SOURCE_EBPF && x->svc == g->nodes[i].svc &&
		      !seen_by(x, OTLP_SOURCE_EBPF)))
			break;
		p = x->parent;
	}
	return p;
}

static void
fill_span(struct demo *d, const struct gen *g, int i, enum otlp_source src,
	  struct otlp_span *s)
{
	const struct node *x = &g->nodes[i];
	const struct service *sv = &services[x->svc];
	int p = row_parent(g, i, src);

	memset(s, 0, sizeof(*s));
	memcpy(s->trace_id, g->trace_ids[x->trace], 16);
	memcpy(s->span_id, x->span_id, 8);
	if (p >= 0) {
		s->has_parent = true;
		memcpy(s->parent_span_id, g->nodes[p].span_id, 8);
	}
	s->service_name = sv->name;
	s->service_namespace = sv->ns;
	s->service_version = sv->version;
	s->k8s_namespace = sv->ns;
	s->k8s_deployment =
		d->deployment[x->svc][0] ? d->deployment[x->svc] : NULL;
	s->k8s_pod = d->pod[x->svc][x->pod];
	s->host_name = d->node_name[x->svc][x->pod];
	s->scope_name = scope_of(x, src, &s->scope_version);
	s->kind = span_kind((enum op)x->op);
	s->start_unix_nano = x->start;
	s->end_unix_nano = x->end;
	s->status_code = x->status;
	if (x->status == 2 && src == OTLP_SOURCE_OTLP && x->fail != F_NONE)
		s->status_message = failures[x->fail].message;
	s->source = src;
	s->http_status = -1;
	s->grpc_status = -1;
	s->input_tokens = s->output_tokens = -1;
	s->resource_json = d->resource[x->svc][x->pod][src];
	switch ((enum op)x->op) {
	case OP_HTTP_SERVER:
		s->name = routes[x->what].name;
		s->http_method = routes[x->what].method;
		s->http_status = x->code;
		break;
	case OP_HTTP_CLIENT:
		s->name = routes[x->what].method;
		s->http_method = routes[x->what].method;
		s->http_status = x->code;
		break;
	case OP_GRPC_SERVER:
	case OP_GRPC_CLIENT:
		s->name = rpcs[x->what].name;
		s->rpc_system = "grpc";
		s->rpc_service = rpcs[x->what].service;
		s->rpc_method = rpcs[x->what].method;
		s->grpc_status = x->code;
		break;
	case OP_SQL_SERVER:
	case OP_SQL_CLIENT:
		s->name = sqls[x->what].name;
		s->db_system = "postgresql";
		s->db_operation = sqls[x->what].op;
		s->db_table = sqls[x->what].table;
		break;
	case OP_PRODUCER: s->name = "orders publish"; break;
	case OP_CONSUMER: s->name = "orders process"; break;
	case OP_CHAT:
		s->name = models[x->model].name;
		s->gen_ai_system = models[x->model].provider;
		s->gen_ai_operation = "chat";
		s->gen_ai_request_model = models[x->model].request;
		if (x->status != 2) {
			s->gen_ai_response_model = models[x->model].response;
			s->input_tokens = x->in_tokens;
			s->output_tokens = x->out_tokens;
		}
		break;
	case OP_AGENT:
		s->name = agents[x->what].span_name;
		s->gen_ai_operation = "invoke_agent";
		break;
	case OP_TOOL:
		s->name = tool_span_names[x->what];
		s->gen_ai_operation = "execute_tool";
		break;
	case OP_INTERNAL: s->name = x->name; break;
	}
}

/*
 * Writes the rows of the group in d->gen into buf, at most limit of them.
 * Returns the rows written, or -1 when buf is full (nothing of the group
 * is kept: buf is as before).  *nodes_done: nodes with a row written.
 */
static int
emit_group(struct demo *d, struct demo_buf *buf, size_t n0, uint64_t limit,
	   int *nodes_done)
{
	struct gen *g = &d->gen;
	size_t text0 = buf->text_len, n = n0;
	const char *session = NULL;
	int i, src;
	struct tw w;

	*nodes_done = 0;
	if (g->session_id[0] != '\0') {
		tw_begin(&w, buf);
		tw_s(&w, g->session_id);
		if ((session = tw_done(&w, buf)) == NULL)
			goto full;
	}
	for (i = 0; i < g->n && n - n0 < limit; i++) {
		const struct node *x = &g->nodes[i];

		for (src = 0; src < 2 && n - n0 < limit; src++) {
			struct otlp_span *s;
			bool text_full;

			if (!seen_by(x, (enum otlp_source)src))
				continue;
			if (n >= d->batch_spans ||
			    buf->text_cap - buf->text_len < ROW_TEXT_MAX)
				goto full;
			s = &buf->spans[n];
			fill_span(d, g, i, (enum otlp_source)src, s);
			span_text(d, buf, x, (enum otlp_source)src, session, s,
				  &text_full);
			s->session_id = x->session ? session : NULL;
			if (text_full)
				goto full;
			if (src == OTLP_SOURCE_EBPF) {
				/* kernel timestamps: a few microseconds
				 * inside the SDK's */
				uint64_t len =
					s->end_unix_nano - s->start_unix_nano;
				uint64_t a = rng_below(&g->r, 15000),
					 b = rng_below(&g->r, 15000);

				if (a > len / 4)
					a = len / 4;
				if (b > len / 4)
					b = len / 4;
				s->start_unix_nano += a;
				s->end_unix_nano -= b;
			}
			n++;
			*nodes_done = i + 1;
		}
	}
	return (int)(n - n0);
full:
	buf->text_len = text0;
	return -1;
}

/* Adds the server spans of the first nodes_done nodes to the minute
 * summaries (once per node, whatever the sources). */
static void
account_group(struct demo *d, int nodes_done)
{
	static const int proto_of[] = {
		[OP_HTTP_SERVER] = PROTO_HTTP,
		[OP_GRPC_SERVER] = PROTO_GRPC,
		[OP_SQL_SERVER] = PROTO_SQL,
		[OP_CONSUMER] = PROTO_MSG,
	};
	const struct gen *g = &d->gen;
	int i;

	for (i = 0; i < nodes_done; i++) {
		const struct node *x = &g->nodes[i];
		const struct metric_names *mn;
		struct minute_stats *st;
		uint64_t len = x->end - x->start;
		double v;
		int m, b, proto;

		if (!is_server((enum op)x->op))
			continue;
		proto = proto_of[x->op];
		m = (int)((x->start - d->start) / NS_PER_MIN);
		if (m >= DEMO_WINDOW_MINS)
			m = DEMO_WINDOW_MINS - 1;
		st = stats_at(d, x->svc, proto, m);
		if (x->status == 2)
			st->err++;
		else
			st->ok++;
		st->sum_ns += (double)len;
		mn = &metric_names[proto];
		v = (double)len / mn->ns_per_unit;
		for (b = 0; b < N_BOUNDS && v > mn->bounds[b]; b++)
			;
		st->buckets[b]++;
	}
}

int
demo_next_spans(struct demo *d, struct demo_buf *buf, struct otlp_batch *b)
{
	size_t n = 0;

	memset(b, 0, sizeof(*b));
	buf->text_len = 0;
	while (d->emitted < d->spans) {
		int rows, nodes_done;

		gen_group(d, d->group);
		if (d->gen.overflow)
			return STATUS_INVALID;
		rows = emit_group(d, buf, n, d->spans - d->emitted,
				  &nodes_done);
		if (rows < 0) {
			if (n == 0)
				return STATUS_INVALID; /* cannot ever fit */
			break;			       /* next batch */
		}
		account_group(d, nodes_done);
		n += (size_t)rows;
		d->emitted += (uint64_t)rows;
		d->group++;
	}
	b->spans = n > 0 ? buf->spans : NULL;
	b->n_spans = n;
	return STATUS_OK;
}

/* ---- metric points ------------------------------------------------------- */

static int
count_points_per_minute(void)
{
	int s, p, n = 0;

	for (s = 0; s < N_SVC; s++) {
		n += 2 * services[s].pods;
		for (p = 0; p < N_PROTO; p++)
			if (services[s].serves & SERVES(p))
				n += 3;
	}
	return n;
}

static const char *
point_attrs(struct demo_buf *buf, const char *members, const char *k,
	    const char *v)
{
	struct tw w;

	tw_begin(&w, buf);
	tw_c(&w, '{');
	tw_s(&w, members);
	if (k != NULL) {
		if (members[0] != '\0')
			tw_c(&w, ',');
		tw_jstr(&w, k);
		tw_c(&w, ':');
		tw_jstr(&w, v);
	}
	tw_c(&w, '}');
	return tw_done(&w, buf);
}

static struct otlp_point *
point_new(struct demo_buf *buf, size_t *n, enum otlp_point_type type,
	  const char *name, const char *unit, const char *desc)
{
	struct otlp_point *p = &buf->points[(*n)++];

	memset(p, 0, sizeof(*p));
	p->type = type;
	p->name = name;
	p->unit = unit;
	p->description = desc;
	p->value = NAN;
	return p;
}

/* One minute of points: gauges per pod, counters and a histogram per
 * service and protocol.  Returns false when buf's text is full (a bug:
 * its size is computed from the points). */
static bool
minute_points(struct demo *d, struct demo_buf *buf, size_t *n)
{
	int m = d->minute, s, k, proto;
	uint64_t t = d->start + (uint64_t)(m + 1) * NS_PER_MIN;
	struct rng *r = &d->mrng;
	const char *pod_attrs;
	bool ok = true;

	for (s = 0; s < N_SVC; s++) {
		const struct service *sv = &services[s];
		enum otlp_source src = sv->seen & SEEN_OTLP ? OTLP_SOURCE_OTLP
							    : OTLP_SOURCE_EBPF;
		uint64_t reqs = 0;
		struct otlp_point *p;

		for (proto = 0; proto < N_PROTO; proto++) {
			const struct minute_stats *st =
				stats_at(d, s, proto, m);

			reqs += st->ok + st->err;
		}
		for (k = 0; k < sv->pods; k++) {
			double cpu =
				sv->cpu_idle * (1 + 0.15 * rng_normal(r)) +
				(double)reqs / sv->pods * sv->cpu_req / 60.0;
			double mem = sv->mem_mib *
				     (1 + 0.02 * sin(2 * M_PI * m / 97.0 + k) +
				      0.005 * rng_normal(r));

			if (s == SVC_SEARCH) {
				/* a slow leak, and a restart when the
				 * container hits its limit */
				d->leak[k] += 0.35 + 0.1 * rng_unif(r);
				if (sv->mem_mib + d->leak[k] > 1024)
					d->leak[k] = 0;
				mem += d->leak[k];
			}
			if (cpu < 0.001)
				cpu = 0.001;
			p = point_new(buf, n, OTLP_POINT_GAUGE,
				      "k8s.pod.cpu.usage", "{cpu}",
				      "CPU used by the pod, in cores.");
			p->service_name = sv->name;
			p->service_namespace = sv->ns;
			p->scope_name = "otelcol/kubeletstatsreceiver";
			p->source = OTLP_SOURCE_OTLP;
			p->time_unix_nano = t;
			p->value = round(cpu * 1000) / 1000;
			pod_attrs = point_attrs(buf, "", "k8s.pod.name",
						d->pod[s][k]);
			ok &= pod_attrs != NULL;
			p->attributes_json = pod_attrs;
			p->resource_json = d->resource[s][k][OTLP_SOURCE_OTLP];
			p = point_new(buf, n, OTLP_POINT_GAUGE,
				      "k8s.pod.memory.working_set", "By",
				      "Working set memory of the pod.");
			p->service_name = sv->name;
			p->service_namespace = sv->ns;
			p->scope_name = "otelcol/kubeletstatsreceiver";
			p->source = OTLP_SOURCE_OTLP;
			p->time_unix_nano = t;
			p->is_int = true;
			p->int_value = (int64_t)(mem * 1024 * 1024);
			p->value = (double)p->int_value;
			p->attributes_json = pod_attrs;
			p->resource_json = d->resource[s][k][OTLP_SOURCE_OTLP];
		}
		for (proto = 0; proto < N_PROTO; proto++) {
			const struct metric_names *mn = &metric_names[proto];
			const struct minute_stats *st =
				stats_at(d, s, proto, m);
			struct cumul *c = &d->cumul[s][proto];
			const char *scope = src == OTLP_SOURCE_EBPF
						    ? "github.com/grafana/beyla"
						    : "sextant.demo";
			int b;

			if (!(sv->serves & SERVES(proto)))
				continue;
			c->ok += st->ok;
			c->err += st->err;
			c->count += st->ok + st->err;
			c->sum_ns += st->sum_ns;
			for (b = 0; b < N_BUCKETS; b++)
				c->buckets[b] += st->buckets[b];
			for (k = 0; k < 2; k++) {
				p = point_new(buf, n, OTLP_POINT_SUM,
					      mn->counter, mn->counter_unit,
					      mn->counter_desc);
				p->service_name = sv->name;
				p->service_namespace = sv->ns;
				p->scope_name = scope;
				p->source = src;
				p->start_unix_nano = d->start;
				p->time_unix_nano = t;
				p->temporality = OTLP_TEMPORALITY_CUMULATIVE;
				p->monotonic = true;
				p->is_int = true;
				p->int_value = (int64_t)(k ? c->err : c->ok);
				p->value = (double)p->int_value;
				p->attributes_json =
					point_attrs(buf, mn->attrs, "outcome",
						    k ? "error" : "ok");
				ok &= p->attributes_json != NULL;
				p->resource_json = d->svc_resource[s][src];
			}
			p = point_new(buf, n, OTLP_POINT_HISTOGRAM, mn->hist,
				      mn->hist_unit, mn->hist_desc);
			p->service_name = sv->name;
			p->service_namespace = sv->ns;
			p->scope_name = scope;
			p->source = src;
			p->start_unix_nano = d->start;
			p->time_unix_nano = t;
			p->temporality = OTLP_TEMPORALITY_CUMULATIVE;
			p->count = c->count;
			p->has_sum = true;
			p->sum = c->sum_ns / mn->ns_per_unit;
			p->n_bounds = N_BOUNDS;
			p->bounds = mn->bounds;
			p->n_bucket_counts = N_BUCKETS;
			p->bucket_counts = buf->buckets + (*n - 1) * N_BUCKETS;
			memcpy(buf->buckets + (*n - 1) * N_BUCKETS, c->buckets,
			       sizeof(c->buckets));
			p->attributes_json =
				point_attrs(buf, mn->attrs, NULL, NULL);
			ok &= p->attributes_json != NULL;
			p->resource_json = d->svc_resource[s][src];
		}
	}
	d->minute++;
	return ok;
}

int
demo_next_points(struct demo *d, struct demo_buf *buf, struct otlp_batch *b)
{
	size_t n = 0, per = (size_t)d->points_per_minute;

	memset(b, 0, sizeof(*b));
	if (d->emitted < d->spans)
		return STATUS_INVALID;
	if (buf->points == NULL) {
		size_t text = d->batch_points * POINT_TEXT_MAX;

		buf->points = calloc(d->batch_points, sizeof(*buf->points));
		buf->buckets = calloc(d->batch_points * N_BUCKETS,
				      sizeof(*buf->buckets));
		if (buf->points == NULL || buf->buckets == NULL)
			return STATUS_NOMEM;
		buf->cap_points = d->batch_points;
		if (buf->text_cap < text) {
			char *t = realloc(buf->text, text);

			if (t == NULL)
				return STATUS_NOMEM;
			buf->text = t;
			buf->text_cap = text;
		}
	}
	buf->text_len = 0;
	while (d->minute < DEMO_WINDOW_MINS && n + per <= buf->cap_points)
		if (!minute_points(d, buf, &n))
			return STATUS_INVALID;
	b->points = n > 0 ? buf->points : NULL;
	b->n_points = n;
	return STATUS_OK;
}

/* ---- set-up -------------------------------------------------------------- */

/* Pod, node and resource names, the same for every run of a seed. */
static void
build_world(struct demo *d)
{
	static const char *const sdk_lang[] = {"go", "java", "python", "nodejs",
					       "cpp"};
	static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
	struct rng r;
	int s, k, src, i;

	rng_seed(&r, d->seed, UINT64_MAX - 1);
	for (s = 0; s < N_SVC; s++) {
		const struct service *sv = &services[s];
		char rs[11], res[sizeof(d->resource[0][0][0])];

		snprintf(d->dns[s], sizeof(d->dns[s]),
			 "%s.%s.svc.cluster.local", sv->name, sv->ns);
		if (s != SVC_POSTGRES)
			snprintf(d->deployment[s], sizeof(d->deployment[s]),
				 "%s", sv->name);
		for (i = 0; i < 10; i++)
			rs[i] = alnum[rng_below(&r, sizeof(alnum) - 1)];
		rs[10] = '\0';
		for (k = 0; k < sv->pods; k++) {
			char suffix[6];
			unsigned node = rng_below(&r, 6);

			for (i = 0; i < 5; i++)
				suffix[i] =
					alnum[rng_below(&r, sizeof(alnum) - 1)];
			suffix[5] = '\0';
			if (s == SVC_POSTGRES)
				snprintf(d->pod[s][k], sizeof(d->pod[s][k]),
					 "%s-%d", sv->name, k);
			else
				snprintf(d->pod[s][k], sizeof(d->pod[s][k]),
					 "%s-%s-%s", sv->name, rs, suffix);
			snprintf(d->node_name[s][k], sizeof(d->node_name[s][k]),
				 "ip-10-0-%u-%u.ec2.internal", 16 + node * 16,
				 40 + node * 7);
			snprintf(d->ip[s][k], sizeof(d->ip[s][k]),
				 "10.42.%u.%u", node, 10 + rng_below(&r, 240));
			for (src = 0; src < 2; src++) {
				/* built aside: the arguments live in *d too */
				snprintf(res, sizeof(res),
					 "{\"service.name\":\"%s\","
					 "\"service.namespace\":\"%s\","
					 "\"service.version\":\"%s\","
					 "\"k8s.namespace.name\":\"%s\","
					 "%s%s%s"
					 "\"k8s.pod.name\":\"%s\","
					 "\"k8s.node.name\":\"%s\","
					 "\"host.name\":\"%s\","
					 "\"telemetry.sdk.name\":\"%s\","
					 "\"telemetry.sdk.language\":\"%s\","
					 "\"telemetry.sdk.version\":\"%s\"}",
					 sv->name, sv->ns, sv->version, sv->ns,
					 d->deployment[s][0]
						 ? "\"k8s.deployment.name\":\""
						 : "",
					 d->deployment[s],
					 d->deployment[s][0] ? "\"," : "",
					 d->pod[s][k], d->node_name[s][k],
					 d->node_name[s][k],
					 src ? "beyla" : "opentelemetry",
					 src ? "go" : sdk_lang[sv->lang],
					 src ? "2.1.0" : "1.34.0");
				memcpy(d->resource[s][k][src], res,
				       sizeof(res));
			}
		}
		for (src = 0; src < 2; src++)
			snprintf(d->svc_resource[s][src],
				 sizeof(d->svc_resource[s][src]),
				 "{\"service.name\":\"%s\","
				 "\"service.namespace\":\"%s\","
				 "\"service.version\":\"%s\","
				 "\"k8s.namespace.name\":\"%s\","
				 "\"telemetry.sdk.name\":\"%s\"}",
				 sv->name, sv->ns, sv->version, sv->ns,
				 src ? "beyla" : "opentelemetry");
	}
}

static int
fail_opt(char *err, size_t errlen, const char *msg)
{
	if (errlen > 0)
		snprintf(err, errlen, "%s", msg);
	return STATUS_INVALID;
}

int
demo_new(const struct demo_options *opt, struct demo **out, char *err,
	 size_t errlen)
{
	struct demo *d;
	uint64_t now;

	*out = NULL;
	if (errlen > 0)
		err[0] = '\0';
	if (opt->spans < 1 || opt->spans > DEMO_SPANS_MAX)
		return fail_opt(err, errlen,
				"spans: expected a number of spans between 1 "
				"and 1000000000");
	now = opt->now_unix_nano / NS_PER_MIN * NS_PER_MIN;
	if (now <= DEMO_WINDOW_NS)
		return fail_opt(err, errlen,
				"now: expected a time after 1970-01-02");
	if (opt->batch_spans != 0 && (opt->batch_spans < DEMO_BATCH_MIN ||
				      opt->batch_spans > DEMO_BATCH_MAX))
		return fail_opt(err, errlen,
				"batch_spans: expected 1000 to 1000000");
	if (opt->batch_points != 0 && (opt->batch_points < DEMO_BATCH_MIN ||
				       opt->batch_points > DEMO_BATCH_MAX))
		return fail_opt(err, errlen,
				"batch_points: expected 1000 to 1000000");
	d = calloc(1, sizeof(*d));
	if (d == NULL)
		return STATUS_NOMEM;
	d->stats = calloc((size_t)N_SVC * N_PROTO * DEMO_WINDOW_MINS,
			  sizeof(*d->stats));
	if (d->stats == NULL) {
		free(d);
		return STATUS_NOMEM;
	}
	d->seed = opt->seed;
	d->spans = opt->spans;
	d->end = now;
	d->start = now - DEMO_WINDOW_NS;
	d->batch_spans =
		opt->batch_spans ? opt->batch_spans : DEMO_BATCH_DEFAULT;
	d->batch_points =
		opt->batch_points ? opt->batch_points : DEMO_BATCH_DEFAULT;
	d->points_per_minute = count_points_per_minute();
	rng_seed(&d->mrng, d->seed, UINT64_MAX - 3);
	build_curve(d);
	build_world(d);
	*out = d;
	return STATUS_OK;
}

void
demo_free(struct demo *d)
{
	if (d == NULL)
		return;
	free(d->stats);
	free(d);
}

int
demo_buf_new(const struct demo *d, struct demo_buf **out)
{
	struct demo_buf *buf = calloc(1, sizeof(*buf));

	*out = NULL;
	if (buf == NULL)
		return STATUS_NOMEM;
	/* a group is written only when it fits whole: the text has room for
	 * the average row plus the largest group at the largest row */
	buf->cap_spans = d->batch_spans;
	buf->text_cap = buf->cap_spans * ROW_TEXT_AVG +
			2 * GROUP_NODES_MAX * ROW_TEXT_MAX;
	buf->spans = calloc(buf->cap_spans, sizeof(*buf->spans));
	buf->text = malloc(buf->text_cap);
	if (buf->spans == NULL || buf->text == NULL) {
		demo_buf_free(buf);
		return STATUS_NOMEM;
	}
	*out = buf;
	return STATUS_OK;
}

void
demo_buf_free(struct demo_buf *buf)
{
	if (buf == NULL)
		return;
	free(buf->spans);
	free(buf->points);
	free(buf->buckets);
	free(buf->text);
	free(buf);
}

uint64_t
demo_window_start(const struct demo *d)
{
	return d->start;
}

uint64_t
demo_window_end(const struct demo *d)
{
	return d->end;
}

uint64_t
demo_total_points(const struct demo *d)
{
	return (uint64_t)d->points_per_minute * DEMO_WINDOW_MINS;
}
