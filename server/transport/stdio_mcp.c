/*
 * stdio_mcp.c - MCP over standard input and output.
 *
 * The caller's thread polls the input, a signalfd and an eventfd: it cuts
 * the input into lines, answers quick methods inline and queues tool calls
 * on the worker pool, as the HTTP transports do.  Everything the server
 * says goes through one exchange that writes whole lines to the output
 * under a mutex, so lines of concurrent workers never interleave.
 * Notifications that belong to the session rather than to a request
 * (tools/list_changed after a reload, resources/updated) land on the
 * session's standalone stream; this transport is that stream's reader and
 * copies the data of each event out as a line.
 *
 * A response written right after a notification waits (briefly) until the
 * client has read the notification.  The TypeScript SDK handles the lines
 * of one read in order but runs notification handlers a microtask later,
 * so a final progress notification that shares a read with its response
 * reaches a request the client already forgot: an "unknown progress
 * token" error, on which some clients drop the connection
 * (typescript-sdk#2580, claude-code#47765).  In separate reads the order
 * holds.
 */
#include "transport/stdio_mcp.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/pool.h"
#include "core/server.h"
#include "json/jsondump.h"
#include "json/jsonload.h"
#include "mcp/dispatch.h"
#include "mcp/exchange.h"
#include "mcp/rpc.h"
#include "mcp/session.h"
#include "mcp/tools.h"

/* The janitor runs about once a second, as under `serve`. */
#define TICK_MS 1000
/* Bytes taken from the input per read. */
#define READ_CHUNK 65536
/* Bytes taken from the standalone stream per stream_read. */
#define PUMP_CHUNK 16384
/* After the grace period, how long cancelled calls get to return. */
#define CANCEL_WAIT_MS 5000
/* The longest a response waits for the client to read the notification
 * before it (see the top of the file); a client that reads at all does
 * so within a millisecond. */
#define PEER_READ_WAIT_MS 200

/* --- line framing ---------------------------------------------------- */

void
stdio_mcp_lines_init(struct stdio_mcp_lines *l, size_t max)
{
	/* one more byte for the '\r' of a CRLF line that is exactly max */
	buf_init(&l->line, max + 1);
	l->max = max;
	l->skipped = 0;
}

void
stdio_mcp_lines_free(struct stdio_mcp_lines *l)
{
	buf_free(&l->line);
	l->skipped = 0;
}

static bool
blank(const char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r')
			return false;
	return true;
}

/* One complete line without its '\n'. */
static void
emit(struct stdio_mcp_lines *l, const char *p, size_t len,
     void (*fn)(void *, const char *, size_t, bool), void *arg)
{
	size_t all = len;

	if (len > 0 && p[len - 1] == '\r')
		len--;
	if (len > l->max)
		fn(arg, NULL, all, true);
	else if (!blank(p, len))
		fn(arg, p, len, false);
}

int
stdio_mcp_lines_feed(struct stdio_mcp_lines *l, const char *data, size_t n,
		     void (*fn)(void *, const char *, size_t, bool), void *arg)
{
	const char *p = data, *end = data + n;
	int rc = STATUS_OK;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t chunk = (size_t)((nl != NULL ? nl : end) - p);

		if (l->skipped > 0) {
			l->skipped += chunk;
		} else if (l->line.len == 0 && nl != NULL) {
			emit(l, p, chunk, fn, arg); /* whole: no copy */
		} else if (l->line.len + chunk > l->max + 1) {
			l->skipped = l->line.len + chunk;
			buf_reset(&l->line);
		} else if (buf_append(&l->line, p, chunk) != STATUS_OK) {
			rc = STATUS_NOMEM;
			l->skipped = l->line.len + chunk;
			buf_reset(&l->line);
		} else if (nl != NULL) {
			emit(l, l->line.data, l->line.len, fn, arg);
			buf_reset(&l->line);
		}
		if (nl != NULL && l->skipped > 0) {
			fn(arg, NULL, l->skipped, true);
			l->skipped = 0;
		}
		p = nl != NULL ? nl + 1 : end;
	}
	return rc;
}

void
stdio_mcp_lines_finish(struct stdio_mcp_lines *l,
		       void (*fn)(void *, const char *, size_t, bool),
		       void *arg)
{
	if (l->skipped > 0)
		fn(arg, NULL, l->skipped, true);
	else if (l->line.len > 0)
		emit(l, l->line.data, l->line.len, fn, arg);
	l->skipped = 0;
	buf_reset(&l->line);
}

/* --- the connection and its exchange --------------------------------- */

struct stdio_conn {
	struct exchange base; /* first; freed with the last reference */
	struct server *srv;
	int out_fd;		/* our own copy of the output */
	int out_kind;		/* OUT_PIPE, OUT_SOCKET or OUT_OTHER */
	pthread_mutex_t out_mu; /* one whole line at a time */
	bool after_notice; /* under out_mu: the last line was no response */
	atomic_bool out_broken; /* the client stopped reading: stop */
	int wake_fd;		/* eventfd: the standalone stream has events */

	/* The caller's thread only. */
	struct session *s; /* after initialize: a reference, kept busy so
			      it never expires while the process lives */
	struct stream *st; /* the standalone stream we read, or NULL */
	unsigned gen;
	struct sse_cursor cur;
	struct buf pump; /* events read from st, not yet written */
	bool eof;
};

enum {
	OUT_OTHER,
	OUT_PIPE,
	OUT_SOCKET
};

static int
out_kind(int fd)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return OUT_OTHER;
	if (S_ISFIFO(st.st_mode))
		return OUT_PIPE;
	if (S_ISSOCK(st.st_mode))
		return OUT_SOCKET;
	return OUT_OTHER;
}

/* Bytes written and not yet read by the client; 0 when unknown. */
static int
peer_unread(const struct stdio_conn *c)
{
	int n = 0;

	/* FIONREAD counts a pipe's buffer from either end; TIOCOUTQ
	 * (SIOCOUTQ) a socket's bytes the peer has not consumed. */
	if (c->out_kind == OUT_PIPE && ioctl(c->out_fd, FIONREAD, &n) == 0)
		return n;
	if (c->out_kind == OUT_SOCKET && ioctl(c->out_fd, TIOCOUTQ, &n) == 0)
		return n;
	return 0;
}

/* Waits (out_mu held) until the client has read what went before. */
static void
wait_peer_read(const struct stdio_conn *c)
{
	int64_t deadline = clock_mono_ms() + PEER_READ_WAIT_MS;

	while (peer_unread(c) > 0 && clock_mono_ms() < deadline) {
		struct timespec ts = {0, 200 * 1000L};

		nanosleep(&ts, NULL);
	}
}

static void
conn_wake(struct stdio_conn *c)
{
	uint64_t one = 1;

	/* An eventfd only blocks near 2^64 pending wakes. */
	if (write(c->wake_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_debug(&(struct log_fields){.duration_ms = -1},
			  "stdio: wake failed: %m");
}

/*
 * Writes text (taken) and a newline to the output in one piece.  A raw
 * newline inside valid JSON can only be whitespace between tokens (string
 * escapes carry the others), so turning one into a space keeps the message
 * intact and the framing right.  response: text is a response, which must
 * not share a read with a notification before it.
 */
static void
conn_write_line(struct stdio_conn *c, char *text, size_t len, bool response)
{
	char *line = realloc(text, len + 1);
	size_t off = 0, i;

	if (line == NULL) {
		free(text);
		log_error(&(struct log_fields){.duration_ms = -1},
			  "stdio: message dropped: out of memory");
		return;
	}
	for (i = 0; i < len; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = ' ';
	line[len++] = '\n';
	pthread_mutex_lock(&c->out_mu);
	if (response && c->after_notice)
		wait_peer_read(c);
	c->after_notice = !response;
	while (off < len && !atomic_load(&c->out_broken)) {
		ssize_t w = write(c->out_fd, line + off, len - off);

		if (w > 0) {
			off += (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && errno == EAGAIN) {
			/* a non-blocking pipe from the parent: wait, as a
			 * blocking write would */
			struct pollfd p = {.fd = c->out_fd, .events = POLLOUT};

			(void)poll(&p, 1, 1000);
		} else {
			log_warn(&(struct log_fields){.duration_ms = -1},
				 "stdio: standard output closed (%s): "
				 "stopping",
				 w < 0 ? strerror(errno) : "no progress");
			atomic_store(&c->out_broken, true);
			conn_wake(c);
		}
	}
	pthread_mutex_unlock(&c->out_mu);
	free(line);
}

static bool
is_response(const json_t *msg)
{
	return json_object_get(msg, "method") == NULL;
}

/* Writes msg (stolen; NULL is ignored). */
static void
conn_send_json(struct stdio_conn *c, json_t *msg)
{
	bool response = is_response(msg);
	char *text;

	if (msg == NULL)
		return;
	text = jsondump(msg, JSON_COMPACT);
	json_decref(msg);
	if (text == NULL) {
		log_error(&(struct log_fields){.duration_ms = -1},
			  "stdio: message dropped: out of memory");
		return;
	}
	conn_write_line(c, text, strlen(text), response);
}

static void
ex_send(struct exchange *base, json_t *msg, bool last)
{
	(void)last; /* every message goes out as it comes */
	conn_send_json((struct stdio_conn *)base, msg);
}

static void
ex_send_text(struct exchange *base, char *text, size_t len)
{
	conn_write_line((struct stdio_conn *)base, text, len, true);
}

static int
ex_drop(struct exchange *base)
{
	(void)base;
	return STATUS_UNSUPPORTED; /* a pipe cannot be resumed */
}

static void
ex_free(struct exchange *base)
{
	struct stdio_conn *c = (struct stdio_conn *)base;

	if (c->out_fd >= 0)
		close(c->out_fd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	pthread_mutex_destroy(&c->out_mu);
	buf_free(&c->pump);
	free(c);
}

static const struct exchange_ops stdio_exchange_ops = {
	.send = ex_send,
	.send_text = ex_send_text,
	.drop = ex_drop,
	.free = ex_free,
};

static void reply_error(struct stdio_conn *c, const json_t *id, int code,
			const char *fmt, ...) PRINTF_LIKE(4, 5);

static void
reply_error(struct stdio_conn *c, const json_t *id, int code, const char *fmt,
	    ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conn_send_json(c, rpc_error(id, code, msg, NULL));
}

/* --- session notifications (the standalone stream) -------------------- */

/* The stream's wake callback (s->mu held): the caller's thread reads. */
static void
stream_wake(void *arg)
{
	conn_wake(arg);
}

static void
attach_standalone(struct stdio_conn *c)
{
	struct session *s = c->s;
	int rc = STATUS_OK;

	pthread_mutex_lock(&s->mu);
	if (s->standalone == NULL)
		rc = stream_open(s, true, false, &s->standalone);
	if (rc == STATUS_OK)
		rc = stream_attach(s->standalone, stream_wake, c, UINT64_MAX,
				   &c->gen, &c->cur);
	if (rc == STATUS_OK)
		c->st = s->standalone;
	pthread_mutex_unlock(&s->mu);
	if (rc != STATUS_OK)
		log_warn(&(struct log_fields){.session = s->id,
					      .duration_ms = -1},
			 "stdio: list-change notifications will not be "
			 "forwarded: %s",
			 status_str(rc));
}

static void
detach_standalone(struct stdio_conn *c)
{
	if (c->st == NULL)
		return;
	pthread_mutex_lock(&c->s->mu);
	stream_detach(c->st, c->gen);
	pthread_mutex_unlock(&c->s->mu);
	c->st = NULL;
}

/*
 * Writes the data of each complete event in c->pump as a line and drops
 * those bytes.  Comments (keep-alives) and events without data (priming)
 * write nothing.
 */
static void
forward_events(struct stdio_conn *c)
{
	const char *p = c->pump.data, *end = p + c->pump.len;
	size_t left;

	while (p < end) {
		const char *ev_end = memmem(p, (size_t)(end - p), "\n\n", 2);
		struct buf data;

		if (ev_end == NULL)
			break;
		buf_init(&data, (size_t)(ev_end - p));
		while (p < ev_end) {
			const char *nl = memchr(p, '\n', (size_t)(ev_end - p));
			const char *le = nl != NULL ? nl : ev_end;

			if (le - p >= 5 && memcmp(p, "data:", 5) == 0) {
				const char *v = p + 5 + (p[5] == ' ');

				if (data.len > 0)
					buf_append(&data, "\n", 1);
				buf_append(&data, v, (size_t)(le - v));
			}
			p = le + (nl != NULL);
		}
		p = ev_end + 2;
		if (buf_error(&data) != STATUS_OK) {
			/* never half a message: the client could not parse it */
			log_error(&(struct log_fields){.duration_ms = -1},
				  "stdio: notification dropped: out of memory");
		} else if (data.len > 0) {
			size_t len = data.len;

			conn_write_line(c, buf_steal(&data, NULL), len, false);
		}
		buf_free(&data);
	}
	/* the bytes not forwarded yet move to the front, and only they stay */
	left = (size_t)(end - p);
	if (left > 0 && p != c->pump.data)
		memmove(c->pump.data, p, left);
	buf_rollback(&c->pump, left);
}

/* Takes what the standalone stream holds (after its wake). */
static void
pump(struct stdio_conn *c)
{
	char chunk[PUMP_CHUNK];
	enum stream_state state;
	uint64_t v;

	if (read(c->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	if (c->st == NULL)
		return;
	pthread_mutex_lock(&c->s->mu);
	do {
		size_t n = 0;

		state = stream_read(c->st, c->gen, &c->cur, chunk,
				    sizeof(chunk), &n);
		if (n > 0)
			buf_append(&c->pump, chunk, n);
	} while (state == STREAM_DATA && buf_error(&c->pump) == STATUS_OK);
	pthread_mutex_unlock(&c->s->mu);
	if (buf_error(&c->pump) != STATUS_OK) {
		log_warn(&(struct log_fields){.session = c->s->id,
					      .duration_ms = -1},
			 "stdio: session notifications dropped (buffer full)");
		buf_reset(&c->pump);
	}
	forward_events(c);
}

/* --- messages in ----------------------------------------------------- */

static bool
is_method(const json_t *msg, const char *name)
{
	const char *m = json_string_value(json_object_get(msg, "method"));

	return m != NULL && strcmp(m, name) == 0;
}

static void
handle_initialize(struct stdio_conn *c, const json_t *msg, const json_t *id)
{
	json_t *response = NULL;
	struct session *s = NULL;

	if (c->s != NULL) {
		reply_error(c, id, RPC_INVALID_REQUEST,
			    "this connection is already initialized: a stdio "
			    "connection carries one session; start a new "
			    "process for another");
		return;
	}
	if (dispatch_initialize(c->srv, msg, &response, &s) != STATUS_OK &&
	    response == NULL) {
		reply_error(c, id, RPC_INTERNAL_ERROR,
			    "could not create a session: out of memory");
		return;
	}
	conn_send_json(c, response);
	if (s == NULL)
		return;
	c->s = s; /* keeps the busy mark of session_create */
	attach_standalone(c);
}

/* One message of the input (an object).  msg: borrowed. */
static void
handle_message(struct stdio_conn *c, const json_t *msg)
{
	const char *why = NULL;
	const json_t *id = NULL;
	enum rpc_kind kind = rpc_classify(msg, &why, &id);

	if (kind == RPC_INVALID) {
		reply_error(c, id, RPC_INVALID_REQUEST, "invalid request: %s",
			    why);
		return;
	}
	if (kind == RPC_REQUEST && is_method(msg, "initialize")) {
		handle_initialize(c, msg, id);
		return;
	}
	if (c->s == NULL) {
		/* Only pings may precede initialize (lifecycle). */
		if (kind == RPC_REQUEST && is_method(msg, "ping"))
			conn_send_json(c, rpc_result(id, json_object()));
		else if (kind == RPC_REQUEST)
			reply_error(c, id, RPC_INVALID_REQUEST,
				    "not initialized: send initialize first");
		return;
	}
	if (dispatch_message(c->srv, c->s, &c->base, msg) == STATUS_FULL)
		reply_error(c, id, RPC_SERVER_BUSY, RPC_MSG_QUEUE_FULL);
}

/* A JSON array: a batch, which only revision 2025-03-26 has. */
static void
handle_batch(struct stdio_conn *c, const json_t *batch)
{
	size_t i, n = json_array_size(batch);
	const char *why;
	char msg[300];

	if (!rpc_batch_allowed(c->s != NULL ? c->s->version : NULL, "line", msg,
			       sizeof(msg))) {
		reply_error(c, NULL, RPC_INVALID_REQUEST, "%s", msg);
		return;
	}
	if ((why = rpc_batch_shape(batch)) != NULL) {
		reply_error(c, NULL, RPC_INVALID_REQUEST, "%s", why);
		return;
	}
	for (i = 0; i < n; i++) {
		const json_t *m = json_array_get(batch, i);

		if (!json_is_object(m))
			reply_error(c, NULL, RPC_INVALID_REQUEST,
				    "invalid request: a batch holds JSON-RPC "
				    "messages (objects)");
		else
			handle_message(c, m);
	}
}

/* One line of input (see stdio_mcp_lines_feed). */
static void
on_line(void *arg, const char *line, size_t len, bool too_long)
{
	struct stdio_conn *c = arg;
	json_error_t jerr;
	json_t *msg;

	if (too_long) {
		reply_error(c, NULL, RPC_INVALID_REQUEST,
			    "message too large: %zu bytes, the limit is %lld "
			    "(server.max_body_bytes)",
			    len, (long long)c->srv->cfg->server.max_body_bytes);
		return;
	}
	msg = jsonload(line, len, &jerr);
	if (msg == NULL) {
		reply_error(c, NULL, RPC_PARSE_ERROR,
			    "parse error: the line is not valid JSON (%s at "
			    "column %d)",
			    jerr.text, jerr.column);
		return;
	}
	if (json_is_object(msg))
		handle_message(c, msg);
	else if (json_is_array(msg))
		handle_batch(c, msg);
	else
		reply_error(c, NULL, RPC_INVALID_REQUEST,
			    "invalid request: a line must hold one JSON-RPC "
			    "message (an object)");
	json_decref(msg);
}

/* --- the loop -------------------------------------------------------- */

/* The signal read from the signalfd, 0 if none. */
static int
take_signal(int sfd)
{
	struct signalfd_siginfo si;

	if (read(sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
		return 0;
	return (int)si.ssi_signo;
}

/*
 * Ends the session like a SIGTERM under serve: tool calls in flight get the
 * grace period to finish and write their answers (a signal cuts it short),
 * then the session closes and what still runs is cancelled.
 */
static void
drain(struct stdio_conn *c, int sfd, const char *why)
{
	struct server *srv = c->srv;
	struct log_fields f = {.duration_ms = -1};
	int64_t deadline = clock_mono_ms() +
			   (int64_t)srv->cfg->server.shutdown_grace_s * 1000;
	int busy = pool_busy(srv->pool) + pool_queue_depth(srv->pool);

	atomic_store(&srv->draining, true);
	if (busy > 0)
		log_info(&f, "%s: waiting up to %d s for %d tool call(s)", why,
			 srv->cfg->server.shutdown_grace_s, busy);
	else
		log_info(&f, "%s: shutting down", why);
	while (pool_busy(srv->pool) + pool_queue_depth(srv->pool) > 0 &&
	       clock_mono_ms() < deadline && !atomic_load(&c->out_broken)) {
		struct pollfd pfd = {.fd = sfd, .events = POLLIN};

		if (poll(&pfd, 1, 20) > 0) {
			int sig = take_signal(sfd);

			if (sig == SIGTERM || sig == SIGINT) {
				log_info(&f,
					 "%s while draining: cancelling the "
					 "tool calls now",
					 sig == SIGTERM ? "SIGTERM" : "SIGINT");
				break;
			}
		}
	}
	session_table_close_all(srv->sessions);
	if (pool_drain(srv->pool, CANCEL_WAIT_MS) != STATUS_OK)
		log_warn(&f, "some tool calls ignored cancellation");
}

/* A copy of out_fd for the connection; stdout then points at stderr. */
static int
take_output(int out_fd)
{
	int fd = dup(out_fd);

	if (fd < 0)
		return -1;
	if (out_fd == STDOUT_FILENO && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int
stdio_mcp_serve(struct server *srv, int in_fd, int out_fd,
		const sigset_t *signals)
{
	struct log_fields f = {.duration_ms = -1};
	struct stdio_conn *c;
	struct stdio_mcp_lines lines;
	char *chunk = NULL;
	int sfd = -1, rc = STATUS_IO;
	int64_t next_tick;
	const char *why = "end of input";

	c = calloc(1, sizeof(*c));
	chunk = malloc(READ_CHUNK);
	if (c == NULL || chunk == NULL) {
		free(c);
		free(chunk);
		log_error(&f, "stdio: out of memory");
		return STATUS_NOMEM;
	}
	c->base.ops = &stdio_exchange_ops;
	atomic_init(&c->base.refs, 1);
	atomic_init(&c->out_broken, false);
	c->srv = srv;
	pthread_mutex_init(&c->out_mu, NULL);
	/* The replay log bounds what the stream can hold; one chunk more. */
	buf_init(&c->pump,
		 (size_t)srv->cfg->server.sse_replay_bytes + 2 * PUMP_CHUNK);
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	c->out_fd = take_output(out_fd);
	c->out_kind = out_kind(c->out_fd);
	sfd = signalfd(-1, signals, SFD_CLOEXEC);
	if (c->wake_fd < 0 || c->out_fd < 0 || sfd < 0) {
		log_error(&f, "stdio: cannot set up the descriptors: %m");
		goto out;
	}
	stdio_mcp_lines_init(&lines, (size_t)srv->cfg->server.max_body_bytes);
	server_live_rdlock(srv);
	log_info(&f,
		 "sextant %s serving MCP on standard input and output with "
		 "%zu tools",
		 SEXTANT_VERSION, tools_count(srv->tools));
	server_live_unlock(srv);

	next_tick = clock_mono_ms() + TICK_MS;
	for (;;) {
		struct pollfd pfd[3] = {
			{.fd = in_fd, .events = POLLIN},
			{.fd = sfd, .events = POLLIN},
			{.fd = c->wake_fd, .events = POLLIN},
		};
		int64_t left = next_tick - clock_mono_ms();
		int n;

		if (atomic_load(&c->out_broken)) {
			why = "standard output closed";
			break;
		}
		n = poll(pfd, 3, left > 0 ? (int)left : 0);
		if (n < 0 && errno != EINTR) {
			log_error(&f, "stdio: poll failed: %m");
			why = "poll failed";
			break;
		}
		if (clock_mono_ms() >= next_tick) {
			srv->tick(srv);
			next_tick = clock_mono_ms() + TICK_MS;
		}
		if (n <= 0)
			continue;
		if (pfd[1].revents & POLLIN) {
			int sig = take_signal(sfd);

			if (sig == SIGHUP) {
				log_info(&f, "SIGHUP: reloading %s",
					 srv->config_path != NULL
						 ? srv->config_path
						 : "(defaults)");
				srv->reload(srv);
			} else if (sig == SIGTERM || sig == SIGINT) {
				why = sig == SIGTERM ? "SIGTERM" : "SIGINT";
				break;
			}
		}
		if (pfd[2].revents & POLLIN)
			pump(c);
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)) {
			ssize_t r = read(in_fd, chunk, READ_CHUNK);

			if (r == 0) {
				c->eof = true;
				break;
			}
			if (r < 0) {
				if (errno == EINTR || errno == EAGAIN)
					continue;
				log_error(&f, "stdio: reading the input: %m");
				why = "input error";
				break;
			}
			if (stdio_mcp_lines_feed(&lines, chunk, (size_t)r,
						 on_line, c) != STATUS_OK)
				log_warn(&f, "stdio: a message was dropped: "
					     "out of memory");
		}
	}
	if (c->eof)
		stdio_mcp_lines_finish(&lines, on_line, c);
	stdio_mcp_lines_free(&lines);
	drain(c, sfd, why);
	rc = STATUS_OK;
out:
	if (c->s != NULL) {
		detach_standalone(c);
		session_release(c->s);
		c->s = NULL;
	}
	if (sfd >= 0)
		close(sfd);
	free(chunk);
	exchange_unref(&c->base); /* calls still running hold theirs */
	return rc;
}
