/*
 * status.h - the one status type shared by lib/ and server/.
 *
 * Functions that can fail return an int: STATUS_OK (0) or one of the
 * negative codes below, and hand results back through out-parameters that
 * stay NULL on failure.  Mark such functions WUR.
 */
#ifndef SEXTANT_STATUS_H
#define SEXTANT_STATUS_H

#define WUR		       __attribute__((warn_unused_result))
#define PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))

enum status {
	STATUS_OK = 0,
	STATUS_NOMEM = -1,   /* allocation failed */
	STATUS_INVALID = -2, /* bad input: caller's or a peer's */
	STATUS_IO = -3, /* system call or network failure (see errno/log) */
	STATUS_NOTFOUND = -4,	 /* no such item */
	STATUS_FULL = -5,	 /* a bounded queue or table is full */
	STATUS_TIMEOUT = -6,	 /* a deadline passed */
	STATUS_CANCELLED = -7,	 /* the work was cancelled */
	STATUS_LIMIT = -8,	 /* input exceeds a configured limit */
	STATUS_UNSUPPORTED = -9, /* feature not available (peer or build) */
	STATUS_CLOSED = -10,	 /* the object is shutting down or closed */
	STATUS_EXISTS = -11,	 /* item already present */
	STATUS_AGAIN = -12,	 /* not finished: more input is needed */
};

/* Short lowercase name of a status, for logs ("nomem", "timeout", ...). */
const char *status_str(int status);

#endif
