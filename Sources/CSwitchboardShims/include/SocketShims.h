#ifndef SWITCHBOARD_SOCKET_SHIMS_H
#define SWITCHBOARD_SOCKET_SHIMS_H

#include <stddef.h>

/* Small POSIX socket helpers, so Swift code needs no raw sockaddr handling.
 * Every function returns a negative errno on failure. */

int sb_listen_tcp(const char *host, int port, int backlog);
int sb_local_port(int fd);
int sb_accept(int listen_fd);
int sb_accept_from(int listen_fd, char *address, size_t len);
int sb_port_taken(const char *host, int port);
int sb_open_reserve(void);
int sb_lock_file(const char *path, char *holder, size_t len);
int sb_create_private_file(const char *path, const char *text);
int sb_release_free_memory(void);
/* Bytes of heap in use (mallinfo2), for benchmarks. */
size_t sb_heap_in_use(void);
void sb_fix_malloc_thresholds(void);
int sb_peer_address(int fd, char *buf, size_t len);
int sb_connect_tcp(const char *host, int port);
int sb_set_recv_timeout(int fd, int ms);
/* A blocking send on `fd` gives up after `ms` (EAGAIN); 0, or -1 with errno set. */
int sb_set_send_timeout(int fd, int ms);
int sb_send_all(int fd, const void *data, size_t len);
long sb_recv(int fd, void *buf, size_t len);
int sb_close(int fd);
int sb_shutdown_write(int fd);
long sb_raise_nofile_limit(void);
const char *sb_strerror(int err);
/* The calling thread's nice value (Linux sets it per thread); 0 elsewhere. */
int sb_thread_nice(void);
/* Sets the calling thread's nice value; 0, or a negative errno. Raising it needs no privilege. */
int sb_thread_set_nice(int nice);
/* A connected pair of Unix stream sockets, close-on-exec; 0, or a negative errno. */
int sb_socketpair(int fds[2]);
/* Puts every thread of the calling process under SCHED_IDLE (threads started later inherit it):
   for a process that does only background work (the webhook delivery worker). The number of
   threads changed, or a negative errno; -ENOSYS off Linux. */
int sb_process_set_idle_policy(void);
/* 1 when the calling thread runs under SCHED_IDLE. */
int sb_thread_is_idle_policy(void);
/* Unblocks every signal for the calling thread (threads it starts later inherit that) and gives
   SIGTERM, SIGINT and SIGHUP their default actions: for a child process that inherited the
   blocked mask of the thread that spawned it (a dispatch thread blocks most signals, and a
   blocked mask survives exec). 0, or a negative errno. */
int sb_take_signals(void);

#endif
