/*
 * stdio_mcp.h - MCP over standard input and output (`sextant stdio`): the
 * client launches the gateway and exchanges newline-delimited JSON-RPC
 * with it (S:2025-11-25/basic/transports#stdio), one session per process,
 * through the same dispatcher and tools as HTTP.  (Not stdio.h: -Iserver
 * would let it shadow the C library's.)
 */
#ifndef SEXTANT_STDIO_MCP_H
#define SEXTANT_STDIO_MCP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/status.h"

struct server;

/*
 * Line framing.  Messages end at '\n'; a '\r' before it is dropped (CRLF
 * senders) and blank lines are skipped.  A line may arrive in any number
 * of reads.  A line longer than max bytes is not kept: its bytes are
 * counted and skipped up to its newline, then reported once as too long,
 * so one oversized message costs no memory and the next line is read
 * normally.  Not thread-safe: one reader.
 */
struct stdio_mcp_lines {
	struct buf line; /* the line so far, when split across reads */
	size_t max;
	size_t skipped; /* > 0 while skipping an overlong line */
};

void stdio_mcp_lines_init(struct stdio_mcp_lines *l, size_t max);
/*
 * Hands every complete line in data to fn, in order: fn(arg, line, len,
 * too_long) with line borrowed for the call only (not NUL-terminated) and
 * len its length without the line end; for a line longer than max,
 * too_long is true, line NULL and len the bytes it had before its '\n'.  STATUS_NOMEM when
 * a partial line cannot be kept: that line is then skipped and reported as
 * too long.
 */
int stdio_mcp_lines_feed(struct stdio_mcp_lines *l, const char *data, size_t n,
			 void (*fn)(void *arg, const char *line, size_t len,
				    bool too_long),
			 void *arg) WUR;
/* End of input: a last line without a newline is handed to fn too. */
void stdio_mcp_lines_finish(struct stdio_mcp_lines *l,
			    void (*fn)(void *arg, const char *line, size_t len,
				       bool too_long),
			    void *arg);
void stdio_mcp_lines_free(struct stdio_mcp_lines *l);

/*
 * Serves MCP on in_fd / out_fd until end of input, SIGTERM or SIGINT,
 * then drains like `serve`: no new messages are read, tool calls in flight
 * get server.shutdown_grace_s to finish (their answers are written), the
 * rest are cancelled.  SIGHUP reloads the configuration.  signals: the set
 * the caller blocked in every thread before starting any (it must hold
 * SIGTERM, SIGINT, SIGHUP and SIGPIPE); they are read here through a
 * signalfd.  srv: built by boot_init, without an HTTP daemon.
 *
 * out_fd carries nothing but protocol messages: the transport writes to
 * a copy of it, and when it is standard output, descriptor 1 is pointed
 * at stderr from then on, so that a stray write from any library cannot
 * corrupt the stream.  Logs go to stderr.  Returns STATUS_OK, or STATUS_IO
 * when the descriptors cannot be set up (logged).
 */
int stdio_mcp_serve(struct server *srv, int in_fd, int out_fd,
		    const sigset_t *signals) WUR;

#endif
