#ifndef SWITCHBOARD_LWS_SHIM_H
#define SWITCHBOARD_LWS_SHIM_H


#include <stdlib.h>
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

/* A repeating libev timer that does nothing but end the current ev_run(EVRUN_ONCE), so the
 * service loop turns at least once per period (connection deadlines, the watchdog). */
static void sb_ev_tick_noop(struct ev_loop *loop, ev_timer *timer, int revents) {
    (void)loop; (void)timer; (void)revents;
}
static inline void *sb_ev_tick_start(struct ev_loop *loop, double seconds) {
    ev_timer *timer = (ev_timer *)malloc(sizeof(ev_timer));
    if (!timer) return NULL;
    ev_timer_init(timer, sb_ev_tick_noop, seconds, seconds);
    ev_timer_start(loop, timer);
    return timer;
}
static inline void sb_ev_tick_stop(struct ev_loop *loop, void *timer) {
    if (!timer) return;
    ev_timer_stop(loop, (ev_timer *)timer);
    free(timer);
}

#endif
