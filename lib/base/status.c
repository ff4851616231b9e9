/* status.c - names of the shared status codes, for log lines. */
#include "base/status.h"

const char *
status_str(int status)
{
	switch (status) {
	case STATUS_OK: return "ok";
	case STATUS_NOMEM: return "out of memory";
	case STATUS_INVALID: return "invalid";
	case STATUS_IO: return "i/o error";
	case STATUS_NOTFOUND: return "not found";
	case STATUS_FULL: return "full";
	case STATUS_TIMEOUT: return "timeout";
	case STATUS_CANCELLED: return "cancelled";
	case STATUS_LIMIT: return "over limit";
	case STATUS_UNSUPPORTED: return "unsupported";
	case STATUS_CLOSED: return "closed";
	case STATUS_EXISTS: return "exists";
	case STATUS_AGAIN: return "again";
	}
	return "unknown status";
}
