#define _GNU_SOURCE
#include "SocketShims.h"

#include <errno.h>
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

/* Resolves host:port and binds a non-blocking listening TCP socket with
 * SO_REUSEADDR and SO_REUSEPORT. Returns the fd, or -errno (or -EINVAL when
 * the host does not resolve). */
int sb_listen_tcp(const char *host, int port, int backlog) {
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
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, backlog) == 0)
            break;
        int err = errno;
        close(fd);
        fd = -err;
    }
    freeaddrinfo(res);
    return fd;
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

const char *sb_strerror(int err) { return strerror(err); }
