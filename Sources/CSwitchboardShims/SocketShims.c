#define _GNU_SOURCE
#include "SocketShims.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netdb.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <malloc.h>
#include <sched.h>
#include <dirent.h>
#include <signal.h>
#include <pthread.h>
#include <stdlib.h>
#ifdef __linux__
#include <sys/syscall.h>
#endif

/* Resolves host:port and binds a TCP socket with SO_REUSEADDR (and SO_REUSEPORT when asked),
 * listening when backlog > 0. Returns the fd, or -errno (-EINVAL when the host does not resolve). */
static int bind_tcp(const char *host, int port, int backlog, int reuseport) {
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[16];
    int fd = -EINVAL, one = 1;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0 || !res)
        return -EINVAL;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { fd = -errno; continue; }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && (backlog <= 0 || listen(fd, backlog) == 0))
            break;
        int err = errno;
        close(fd);
        fd = -err;
        if (err == EADDRINUSE) break;
    }
    freeaddrinfo(res);
    return fd;
}

/* A non-blocking listening TCP socket with SO_REUSEADDR and SO_REUSEPORT. Returns the fd, or
 * -errno (or -EINVAL when the host does not resolve). */
int sb_listen_tcp(const char *host, int port, int backlog) {
    return bind_tcp(host, port, backlog, 1);
}

/* Whether another socket already holds host:port: binds a probe WITHOUT SO_REUSEPORT, which
 * fails while any socket (even one with SO_REUSEPORT) is bound there. Returns 0 when the port is
 * free, -EADDRINUSE when taken, another -errno on other failures. */
int sb_port_taken(const char *host, int port) {
    int fd = bind_tcp(host, port, 0, 0);
    if (fd < 0) return fd;
    close(fd);
    return 0;
}

/* The local port a socket is bound to, or -1. */
int sb_local_port(int fd) {
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return -1;
    if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
    if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return -1;
}

/* Accepts one connection, non-blocking, close-on-exec, TCP_NODELAY.
 * Returns the fd, or -errno. */
int sb_accept(int listen_fd) {
    int one = 1;
    int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return -errno;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* Accepts one connection like sb_accept and writes the peer's numeric address into address
 * (empty when it cannot be read). Returns the fd, or -errno. */
int sb_accept_from(int listen_fd, char *address, size_t len) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    int one = 1;
    int fd = accept4(listen_fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return -errno;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (len > 0) {
        address[0] = 0;
        if (getnameinfo((struct sockaddr *)&ss, sl, address, (socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0)
            address[0] = 0;
    }
    return fd;
}

/* A descriptor held in reserve for running out of descriptors (see ServiceThread.acceptPending). */
int sb_open_reserve(void) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

/* Takes an exclusive, non-blocking flock on path (created 0644) and writes this process's pid
 * into it. Returns the fd, which holds the lock until the process exits; or -EWOULDBLOCK with
 * the file's contents (the holder's pid) in holder; or another -errno. */
int sb_lock_file(const char *path, char *holder, size_t len) {
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return -errno;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int err = errno;
        if (len > 0) {
            ssize_t n = pread(fd, holder, len - 1, 0);
            holder[n > 0 ? n : 0] = 0;
        }
        close(fd);
        return err == EWOULDBLOCK ? -EWOULDBLOCK : -err;
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        int err = errno;
        close(fd);
        return -err;
    }
    return fd;
}

/* Creates path (which must not exist) readable by its owner only (0600), writes text and syncs.
 * Returns 0, or -errno (-EEXIST when it exists). */
int sb_create_private_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return -errno;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0) { if (errno == EINTR) continue; int err = errno; close(fd); unlink(path); return -err; }
        done += (size_t)n;
    }
    if (fsync(fd) != 0) { int err = errno; close(fd); unlink(path); return -err; }
    return close(fd) == 0 ? 0 : -errno;
}

/* Hands heap memory that is free back to the kernel (glibc keeps it otherwise, so RSS stays at
 * its peak after a load). Returns 1 if memory was released. */
int sb_release_free_memory(void) { return malloc_trim(0); }

/* Bytes of heap in use (glibc's mallinfo2 uordblks), for benchmarks that weigh a structure. */
size_t sb_heap_in_use(void) { return mallinfo2().uordblks; }

/* Fixes glibc's mmap and trim thresholds. Left dynamic, freeing one large block (a grown hash
 * table) raises both to its size, and the thread arenas then keep that much free memory
 * resident for good. */
void sb_fix_malloc_thresholds(void) {
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024);
}

/* The peer address of a socket as text ("127.0.0.1"), into buf. */
int sb_peer_address(int fd, char *buf, size_t len) {
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0) return -1;
    return getnameinfo((struct sockaddr *)&ss, sl, buf, (socklen_t)len, NULL, 0, NI_NUMERICHOST);
}

/* A blocking client TCP connection with TCP_NODELAY, for tests and tools.
 * Returns the fd, or -errno (-EINVAL when the host does not resolve). */
int sb_connect_tcp(const char *host, int port) {
    struct addrinfo hints, *res = NULL, *ai;
    char portstr[16];
    int fd = -EINVAL, one = 1;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    snprintf(portstr, sizeof(portstr), "%d", port);
    if (getaddrinfo(host, portstr, &hints, &res) != 0 || !res)
        return -EINVAL;
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { fd = -errno; continue; }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
            break;
        }
        int err = errno;
        close(fd);
        fd = -err;
    }
    freeaddrinfo(res);
    return fd;
}

/* Sets a receive timeout on a blocking socket (milliseconds). */
int sb_set_recv_timeout(int fd, int ms) {
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

int sb_set_send_timeout(int fd, int ms) {
    struct timeval tv;
    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* Sends all bytes on a blocking socket; returns 0 or -errno. */
int sb_send_all(int fd, const void *data, size_t len) {
    const char *p = (const char *)data;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) { if (errno == EINTR) continue; return -errno; }
        p += n; len -= (size_t)n;
    }
    return 0;
}

/* Receives up to len bytes; returns the count, 0 at EOF, or -errno. */
long sb_recv(int fd, void *buf, size_t len) {
    for (;;) {
        ssize_t n = recv(fd, buf, len, 0);
        if (n < 0 && errno == EINTR) continue;
        return n < 0 ? -errno : (long)n;
    }
}

/* Raises the soft open-file limit to the hard limit; returns the new soft limit. */
long sb_raise_nofile_limit(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return (long)rl.rlim_cur;
}


int sb_close(int fd) { return close(fd) == 0 ? 0 : -errno; }

/* Ends the sending side of a connected socket (the peer reads end of stream); reading goes on. */
int sb_shutdown_write(int fd) { return shutdown(fd, SHUT_WR) == 0 ? 0 : -errno; }

const char *sb_strerror(int err) { return strerror(err); }

int sb_thread_nice(void) {
#ifdef __linux__
    errno = 0;
    int value = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    return errno == 0 ? value : 0;
#else
    return 0;
#endif
}

int sb_thread_set_nice(int nice) {
#ifdef __linux__
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) == 0 ? 0 : -errno;
#else
    (void)nice;
    return -ENOSYS;
#endif
}

int sb_socketpair(int fds[2]) {
    return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0 ? 0 : -errno;
}

int sb_process_set_idle_policy(void) {
#ifdef __linux__
    struct sched_param param = { .sched_priority = 0 };
    int changed = 0;
    DIR *tasks = opendir("/proc/self/task");
    if (tasks == NULL) return -errno;
    struct dirent *entry;
    while ((entry = readdir(tasks)) != NULL) {
        if (entry->d_name[0] == '.') continue;
        pid_t tid = (pid_t)atoi(entry->d_name);
        if (sched_setscheduler(tid, SCHED_IDLE, &param) != 0) {
            int err = errno;
            closedir(tasks);
            return -err;
        }
        changed++;
    }
    closedir(tasks);
    return changed;
#else
    return -ENOSYS;
#endif
}

int sb_thread_is_idle_policy(void) {
#ifdef __linux__
    return sched_getscheduler(0) == SCHED_IDLE;
#else
    return 0;
#endif
}

int sb_take_signals(void) {
    sigset_t none;
    sigemptyset(&none);
    int failed = pthread_sigmask(SIG_SETMASK, &none, NULL);
    if (failed != 0) return -failed;
    int taken[] = { SIGTERM, SIGINT, SIGHUP };
    for (unsigned i = 0; i < sizeof taken / sizeof taken[0]; i++) {
        if (signal(taken[i], SIG_DFL) == SIG_ERR) return -errno;
    }
    return 0;
}
