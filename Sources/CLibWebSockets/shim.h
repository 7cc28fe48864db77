#ifndef SWITCHBOARD_LWS_SHIM_H
#define SWITCHBOARD_LWS_SHIM_H


#include <ev.h>
#include <libwebsockets.h>

/* LWS_PRE is a computed macro Swift cannot import. */
static inline size_t sb_lws_pre(void) { return LWS_PRE; }

/* libev: an epoll-backed loop that the lws context uses as its foreign loop. */
static inline struct ev_loop *sb_ev_loop_new(void) {
    return ev_loop_new(EVBACKEND_EPOLL | EVFLAG_NOSIGMASK);
}
static inline void sb_ev_run_once(struct ev_loop *loop) { ev_run(loop, EVRUN_ONCE); }
static inline void sb_ev_loop_destroy(struct ev_loop *loop) { ev_loop_destroy(loop); }

#endif
