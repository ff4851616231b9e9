/*
 * pgtest.h - a throwaway PostgreSQL cluster for unit tests: initdb into a
 * temporary directory, postgres on a free loopback port and a Unix socket
 * in that directory, stop, start again, and remove everything.
 *
 * Header-only (static functions) because each unit test is linked from one
 * .c file.  Run as root, initdb and postgres run as the `postgres` user
 * (they refuse root); otherwise as the current user.  The postmaster is a
 * child of the test, in its process group, so a test runner that kills the
 * group never leaves it behind.  Binaries: $SEXTANT_PG_BIN, or
 * /usr/lib/postgresql/15/bin.
 */
#ifndef SEXTANT_PGTEST_H
#define SEXTANT_PGTEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <libpq-fe.h>
#include <limits.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PGTEST_DEFAULT_BIN "/usr/lib/postgresql/15/bin"
#define PGTEST_START_S	   30 /* longest wait for the server to accept */

struct pgtest_cluster {
	char dir[128];	    /* temporary root, also the socket directory */
	char data[192];	    /* dir/data */
	char log[192];	    /* dir/server.log: initdb, postgres, pg_ctl */
	char bin[PATH_MAX]; /* directory of initdb, postgres, pg_ctl */
	int port;
	pid_t pid; /* postmaster, 0 when not running */
	bool drop_privileges;
	uid_t uid;
	gid_t gid;
	char conninfo[256]; /* TCP, database postgres, user postgres */
};

static long
pgtest_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void
pgtest_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* A loopback port nobody listens on now (a small race is accepted). */
static int
pgtest_free_port(void)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd < 0)
		return -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/*
 * Runs argv (argv[0] a full path) with output appended to the cluster log,
 * as the postgres user when the test runs as root.  Returns the child's
 * pid, or -1.  The child only makes async-signal-safe calls: the test may
 * have threads running.
 */
static pid_t
pgtest_spawn(const struct pgtest_cluster *pc, char *const argv[])
{
	int fd = open(pc->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	pid_t pid;

	if (fd < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int in = open("/dev/null", O_RDONLY);

		if (in < 0 || dup2(in, 0) < 0 || dup2(fd, 1) < 0 ||
		    dup2(fd, 2) < 0)
			_exit(126);
		if (pc->drop_privileges &&
		    (setgroups(0, NULL) != 0 || setgid(pc->gid) != 0 ||
		     setuid(pc->uid) != 0))
			_exit(126);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd);
	return pid;
}

/* Runs argv to completion: its exit status, or -1. */
static int
pgtest_run(const struct pgtest_cluster *pc, char *const argv[])
{
	int status;
	pid_t pid = pgtest_spawn(pc, argv);

	if (pid < 0)
		return -1;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Prints the end of the cluster log, for a failure's context. */
static void
pgtest_dump_log(const struct pgtest_cluster *pc)
{
	char buf[4096];
	FILE *f = fopen(pc->log, "r");
	long size;
	size_t n;

	if (f == NULL)
		return;
	fseek(f, 0, SEEK_END);
	size = ftell(f);
	fseek(f,
	      size > (long)sizeof(buf) - 1 ? size - (long)sizeof(buf) + 1 : 0,
	      SEEK_SET);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	fprintf(stderr, "---- %s (end) ----\n%s\n----\n", pc->log, buf);
}

/* Waits until the server accepts connections: 0, or -1 (it died or took
 * too long). */
static int
pgtest_wait_accepting(struct pgtest_cluster *pc)
{
	char ping[320];
	long deadline = pgtest_now_ms() + PGTEST_START_S * 1000L;
	int status;

	snprintf(ping, sizeof(ping), "%s connect_timeout=2", pc->conninfo);
	while (pgtest_now_ms() < deadline) {
		if (PQping(ping) == PQPING_OK)
			return 0;
		if (waitpid(pc->pid, &status, WNOHANG) == pc->pid) {
			pc->pid = 0;
			fprintf(stderr,
				"pgtest: postgres exited at start-up\n");
			return -1;
		}
		pgtest_sleep_ms(50);
	}
	fprintf(stderr, "pgtest: postgres did not accept connections\n");
	return -1;
}

/* Starts postgres on the existing data directory: 0 or -1. */
static int
pgtest_start_server(struct pgtest_cluster *pc)
{
	char path[PATH_MAX + 16], port[16];
	char *argv[] = {path,
			"-D",
			pc->data,
			"-k",
			pc->dir,
			"-p",
			port,
			"-c",
			"listen_addresses=127.0.0.1",
			"-c",
			"fsync=off",
			"-c",
			"synchronous_commit=off",
			"-c",
			"full_page_writes=off",
			"-c",
			"max_connections=40",
			"-c",
			"shared_buffers=16MB",
			NULL};

	snprintf(path, sizeof(path), "%s/postgres", pc->bin);
	snprintf(port, sizeof(port), "%d", pc->port);
	pc->pid = pgtest_spawn(pc, argv);
	if (pc->pid < 0) {
		pc->pid = 0;
		return -1;
	}
	if (pgtest_wait_accepting(pc) != 0) {
		pgtest_dump_log(pc);
		return -1;
	}
	return 0;
}

/*
 * Stops the server the way an operator would (pg_ctl stop -m fast: open
 * sessions are terminated with 57P01) and reaps it.  Falls back to
 * signals if pg_ctl fails.  0 when it is down.
 */
static int
pgtest_stop_server(struct pgtest_cluster *pc)
{
	char path[PATH_MAX + 16];
	char *argv[] = {path,	"stop", "-D", pc->data, "-m",
			"fast", "-w",	"-t", "30",	NULL};
	int status;
	long deadline;

	if (pc->pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "%s/pg_ctl", pc->bin);
	if (pgtest_run(pc, argv) != 0)
		kill(pc->pid, SIGINT);
	deadline = pgtest_now_ms() + 15000;
	while (waitpid(pc->pid, &status, WNOHANG) != pc->pid) {
		if (pgtest_now_ms() > deadline) {
			kill(pc->pid, SIGKILL);
			waitpid(pc->pid, &status, 0);
			break;
		}
		pgtest_sleep_ms(20);
	}
	pc->pid = 0;
	return 0;
}

/* Creates and starts a cluster: 0, or -1 with a message on stderr (the
 * cluster is then destroyed already). */
static void pgtest_destroy(struct pgtest_cluster *pc);

static int
pgtest_start(struct pgtest_cluster *pc)
{
	char path[PATH_MAX + 16];
	char *initdb[] = {path,		"-D",	     pc->data,
			  "-A",		"trust",     "-U",
			  "postgres",	"-E",	     "UTF8",
			  "--locale=C", "--no-sync", "--no-instructions",
			  NULL};
	const char *bin = getenv("SEXTANT_PG_BIN");

	memset(pc, 0, sizeof(*pc));
	snprintf(pc->bin, sizeof(pc->bin), "%s",
		 bin != NULL && bin[0] != '\0' ? bin : PGTEST_DEFAULT_BIN);
	snprintf(pc->dir, sizeof(pc->dir), "/tmp/sextant-pgtest-XXXXXX");
	if (mkdtemp(pc->dir) == NULL) {
		fprintf(stderr, "pgtest: mkdtemp: %s\n", strerror(errno));
		pc->dir[0] = '\0';
		return -1;
	}
	snprintf(pc->data, sizeof(pc->data), "%s/data", pc->dir);
	snprintf(pc->log, sizeof(pc->log), "%s/server.log", pc->dir);
	if (geteuid() == 0) {
		struct passwd *pw = getpwnam("postgres");

		if (pw == NULL) {
			fprintf(stderr, "pgtest: running as root and there "
					"is no postgres user to run initdb\n");
			goto fail;
		}
		pc->drop_privileges = true;
		pc->uid = pw->pw_uid;
		pc->gid = pw->pw_gid;
		if (chown(pc->dir, pc->uid, pc->gid) != 0) {
			fprintf(stderr, "pgtest: chown %s: %s\n", pc->dir,
				strerror(errno));
			goto fail;
		}
	}
	pc->port = pgtest_free_port();
	if (pc->port <= 0)
		goto fail;
	snprintf(pc->conninfo, sizeof(pc->conninfo),
		 "host=127.0.0.1 port=%d dbname=postgres user=postgres "
		 "sslmode=disable",
		 pc->port);
	snprintf(path, sizeof(path), "%s/initdb", pc->bin);
	if (pgtest_run(pc, initdb) != 0) {
		fprintf(stderr, "pgtest: initdb failed\n");
		pgtest_dump_log(pc);
		goto fail;
	}
	if (pgtest_start_server(pc) != 0)
		goto fail;
	return 0;
fail:
	pgtest_destroy(pc);
	return -1;
}

static int
pgtest_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Stops the server if it runs and removes the directory.  Idempotent. */
static void
pgtest_destroy(struct pgtest_cluster *pc)
{
	pgtest_stop_server(pc);
	if (pc->dir[0] != '\0')
		nftw(pc->dir, pgtest_rm, 16, FTW_DEPTH | FTW_PHYS);
	pc->dir[0] = '\0';
}

#endif
