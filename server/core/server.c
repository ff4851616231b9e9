/*
 * server.c - the gateway's shared context (see server.h): what every room
 * of server/ reads, and the lock of its live settings.  Building it,
 * reloading it and the janitor are server/boot/boot.c's.
 */
#include "core/server.h"

void
server_live_rdlock(struct server *srv)
{
	pthread_rwlock_rdlock(&srv->live_lock);
}

void
server_live_unlock(struct server *srv)
{
	pthread_rwlock_unlock(&srv->live_lock);
}
