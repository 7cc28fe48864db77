/*
 * echo.c: the C baseline for Switchboard's benchmarks.
 *
 * One thread, one libwebsockets 4.1 context, listening on 127.0.0.1:<port>.
 * Port 0 picks a free port; the real one is printed as `listening port=N`.
 *
 * Two behaviours, chosen per connection by the upgrade path:
 *
 *   any path but /peerjs  echo: each complete text message goes back to its
 *                         sender, unchanged.
 *   /peerjs?id=<id>&...   a minimal PeerJS-shaped relay, the lower bound of
 *                         what a relay costs on lws: the socket is registered
 *                         under <id> and gets {"type":"OPEN"}; a message with
 *                         "dst":"<peer>" is forwarded to that peer as
 *                         {"src":"<id>",<the rest of the message>}; anything
 *                         else (HEARTBEAT, unknown dst) is dropped. No key or
 *                         token checks, no offline queues, no JSON parsing.
 *
 * The event loop is libev (epoll) through Debian's lws evlib plugin, driven
 * as a foreign loop so SIGINT and SIGTERM stop it cleanly. Without the plugin
 * (or with --poll) lws's default poll() loop is used.
 *
 * Usage: echo <port> [--poll]
 */

#define _GNU_SOURCE /* memmem */

#include <libwebsockets.h>
#include <ev.h>

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ID_LEN 64
#define TABLE_BITS 17 /* 131072 slots: enough for tens of thousands of ids */
#define TABLE_SIZE (1u << TABLE_BITS)
#define MAX_MESSAGE (1u << 20)

/* One outgoing message; the payload starts LWS_PRE bytes into buf. */
struct out_msg {
	struct out_msg *next;
	size_t len;
	unsigned char buf[];
};

/* Per-connection state, allocated and zeroed by lws. */
struct session {
	struct lws *wsi;
	struct out_msg *head, *tail;
	unsigned char *rx;
	size_t rx_len, rx_cap;
	int peerjs;
	int registered;
	char id[MAX_ID_LEN];
};

/* id -> session, open addressing with linear probing. */
static struct session *id_table[TABLE_SIZE];
static volatile sig_atomic_t stop_requested;

static uint32_t
hash_id(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (uint8_t)*s++) * 16777619u;
	return h & (TABLE_SIZE - 1);
}

static struct session **
table_slot(const char *id)
{
	uint32_t i = hash_id(id);
	unsigned int probes;

	for (probes = 0; probes < TABLE_SIZE; probes++) {
		struct session **slot = &id_table[i];

		if (!*slot || !strcmp((*slot)->id, id))
			return slot;
		i = (i + 1) & (TABLE_SIZE - 1);
	}
	return NULL;
}

static struct session *
table_find(const char *id)
{
	struct session **slot = table_slot(id);

	return slot ? *slot : NULL;
}

static int
table_put(struct session *s)
{
	struct session **slot = table_slot(s->id);

	if (!slot)
		return -1;
	if (*slot)
		(*slot)->registered = 0; /* same id again: the new socket wins */
	*slot = s;
	s->registered = 1;
	return 0;
}

/* Deletion with backward shift, so probe chains stay unbroken. */
static void
table_remove(struct session *s)
{
	struct session **slot;
	uint32_t i, j;

	if (!s->registered)
		return;
	s->registered = 0;
	slot = table_slot(s->id);
	if (!slot || *slot != s)
		return;
	i = (uint32_t)(slot - id_table);
	*slot = NULL;
	for (j = (i + 1) & (TABLE_SIZE - 1); id_table[j];
	     j = (j + 1) & (TABLE_SIZE - 1)) {
		uint32_t home = hash_id(id_table[j]->id);
		int movable = (j > i) ? (home <= i || home > j)
				      : (home <= i && home > j);

		if (movable) {
			id_table[i] = id_table[j];
			id_table[j] = NULL;
			i = j;
		}
	}
}

/* Queue len bytes (two parts, either may be empty) for sending to s. */
static int
enqueue(struct session *s, const void *a, size_t alen, const void *b,
	size_t blen)
{
	struct out_msg *m = malloc(sizeof(*m) + LWS_PRE + alen + blen);

	if (!m)
		return -1;
	m->next = NULL;
	m->len = alen + blen;
	memcpy(m->buf + LWS_PRE, a, alen);
	if (blen)
		memcpy(m->buf + LWS_PRE + alen, b, blen);
	if (s->tail)
		s->tail->next = m;
	else
		s->head = m;
	s->tail = m;
	lws_callback_on_writable(s->wsi);
	return 0;
}

static void
free_queue(struct session *s)
{
	while (s->head) {
		struct out_msg *m = s->head;

		s->head = m->next;
		free(m);
	}
	s->tail = NULL;
	free(s->rx);
	s->rx = NULL;
	s->rx_len = s->rx_cap = 0;
}

/* Append a fragment to the reassembly buffer. */
static int
rx_append(struct session *s, const void *in, size_t len)
{
	if (s->rx_len + len > MAX_MESSAGE)
		return -1;
	if (s->rx_len + len > s->rx_cap) {
		size_t cap = s->rx_cap ? s->rx_cap * 2 : 4096;
		unsigned char *p;

		while (cap < s->rx_len + len)
			cap *= 2;
		p = realloc(s->rx, cap);
		if (!p)
			return -1;
		s->rx = p;
		s->rx_cap = cap;
	}
	memcpy(s->rx + s->rx_len, in, len);
	s->rx_len += len;
	return 0;
}

/* Copy the string value of "dst" into out; 0 when found. */
static int
find_dst(const char *msg, size_t len, char *out, size_t outlen)
{
	static const char key[] = "\"dst\"";
	const char *end = msg + len, *p = msg, *q;
	size_t n;

	while ((p = memmem(p, (size_t)(end - p), key, sizeof(key) - 1))) {
		p += sizeof(key) - 1;
		while (p < end && (*p == ' ' || *p == ':'))
			p++;
		if (p >= end || *p != '"')
			continue;
		p++;
		q = memchr(p, '"', (size_t)(end - p));
		if (!q)
			return -1;
		n = (size_t)(q - p);
		if (!n || n >= outlen)
			return -1;
		memcpy(out, p, n);
		out[n] = '\0';
		return 0;
	}
	return -1;
}

/* Forward a complete message from s to its "dst" with "src" prepended. */
static void
relay(struct session *s, const unsigned char *msg, size_t len)
{
	char dst_id[MAX_ID_LEN], head[MAX_ID_LEN + 16];
	struct session *dst;
	int n;

	if (!s->registered || len < 2 || msg[0] != '{')
		return;
	if (find_dst((const char *)msg, len, dst_id, sizeof(dst_id)))
		return;
	dst = table_find(dst_id);
	if (!dst)
		return;
	n = snprintf(head, sizeof(head), "{\"src\":\"%s\",", s->id);
	enqueue(dst, head, (size_t)n, msg + 1, len - 1);
}

static int
on_established(struct lws *wsi, struct session *s)
{
	static const char open_frame[] = "{\"type\":\"OPEN\"}";
	char uri[256];

	s->wsi = wsi;
	if (lws_hdr_copy(wsi, uri, sizeof(uri), WSI_TOKEN_GET_URI) < 0)
		uri[0] = '\0';
	if (strcmp(uri, "/peerjs"))
		return 0;

	char buf[MAX_ID_LEN + 8];
	const char *id = lws_get_urlarg_by_name(wsi, "id=", buf, sizeof(buf));

	s->peerjs = 1;
	if (!id || !*id || strlen(id) >= MAX_ID_LEN)
		return -1;
	strcpy(s->id, id);
	if (table_put(s))
		return -1;
	return enqueue(s, open_frame, sizeof(open_frame) - 1, NULL, 0);
}

static int
on_receive(struct lws *wsi, struct session *s, void *in, size_t len)
{
	if (lws_frame_is_binary(wsi))
		return 0;
	if (lws_is_first_fragment(wsi))
		s->rx_len = 0;
	if (lws_is_first_fragment(wsi) && lws_is_final_fragment(wsi)) {
		/* the common case: a whole message in one piece, no copy */
		if (s->peerjs)
			relay(s, in, len);
		else
			enqueue(s, in, len, NULL, 0);
		return 0;
	}
	if (rx_append(s, in, len))
		return -1;
	if (!lws_is_final_fragment(wsi))
		return 0;
	if (s->peerjs)
		relay(s, s->rx, s->rx_len);
	else
		enqueue(s, s->rx, s->rx_len, NULL, 0);
	s->rx_len = 0;
	return 0;
}

static int
on_writeable(struct lws *wsi, struct session *s)
{
	struct out_msg *m = s->head;

	if (!m)
		return 0;
	if (lws_write(wsi, m->buf + LWS_PRE, m->len, LWS_WRITE_TEXT) <
	    (int)m->len)
		return -1;
	s->head = m->next;
	if (!s->head)
		s->tail = NULL;
	free(m);
	if (s->head)
		lws_callback_on_writable(wsi);
	return 0;
}

static int
callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
	 void *in, size_t len)
{
	struct session *s = user;

	switch (reason) {
	case LWS_CALLBACK_ESTABLISHED:
		return on_established(wsi, s);
	case LWS_CALLBACK_RECEIVE:
		return on_receive(wsi, s, in, len);
	case LWS_CALLBACK_SERVER_WRITEABLE:
		return on_writeable(wsi, s);
	case LWS_CALLBACK_CLOSED:
		table_remove(s);
		free_queue(s);
		return 0;
	default:
		return lws_callback_http_dummy(wsi, reason, user, in, len);
	}
}

static void
on_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

static void
on_signal_poll(int signum)
{
	(void)signum;
	stop_requested = 1;
}

static struct lws_context *
create_context(int port, void **foreign_loops)
{
	static const struct lws_protocols protocols[] = {
		{ "bench-echo", callback, sizeof(struct session), 4096, 0,
		  NULL, 0 },
		{ NULL, NULL, 0, 0, 0, NULL, 0 }
	};
	struct lws_context_creation_info info;

	memset(&info, 0, sizeof(info));
	info.port = port;
	info.iface = "127.0.0.1";
	info.protocols = protocols;
	info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
	if (foreign_loops) {
		info.options |= LWS_SERVER_OPTION_LIBEV;
		info.foreign_loops = foreign_loops;
	}
	return lws_create_context(&info);
}

static int
listen_port(struct lws_context *context)
{
	struct lws_vhost *vh = lws_get_vhost_by_name(context, "default");

	return vh ? lws_get_vhost_listen_port(vh) : -1;
}

/* Run with libev; returns 1 if the plugin could not be used. */
static int
run_libev(int port)
{
	struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
	ev_signal sigint_w, sigterm_w;
	void *foreign_loops[1] = { loop };
	struct lws_context *context;

	if (!loop)
		return 1;
	ev_signal_init(&sigint_w, on_signal, SIGINT);
	ev_signal_init(&sigterm_w, on_signal, SIGTERM);
	ev_signal_start(loop, &sigint_w);
	ev_signal_start(loop, &sigterm_w);
	context = create_context(port, foreign_loops);
	if (!context) {
		ev_loop_destroy(loop);
		return 1;
	}
	printf("listening port=%d loop=libev\n", listen_port(context));
	fflush(stdout);
	ev_run(loop, 0);
	lws_context_destroy(context);
	ev_signal_stop(loop, &sigint_w);
	ev_signal_stop(loop, &sigterm_w);
	ev_loop_destroy(loop);
	return 0;
}

static int
run_poll(int port)
{
	struct lws_context *context = create_context(port, NULL);

	if (!context)
		return 1;
	signal(SIGINT, on_signal_poll);
	signal(SIGTERM, on_signal_poll);
	printf("listening port=%d loop=poll\n", listen_port(context));
	fflush(stdout);
	while (!stop_requested && lws_service(context, 0) >= 0)
		;
	lws_context_destroy(context);
	return 0;
}

int
main(int argc, char **argv)
{
	char *end;
	long port;
	int use_poll = argc > 2 && !strcmp(argv[2], "--poll");

	if (argc < 2 || argc > 3 || (argc == 3 && !use_poll)) {
		fprintf(stderr, "usage: %s <port> [--poll]\n", argv[0]);
		return 2;
	}
	errno = 0;
	port = strtol(argv[1], &end, 10);
	if (errno || *end || port < 0 || port > 65535) {
		fprintf(stderr, "bad port: %s\n", argv[1]);
		return 2;
	}
	lws_set_log_level(LLL_ERR | LLL_WARN, NULL);
	if (!use_poll && !run_libev((int)port))
		return 0;
	if (!use_poll)
		fprintf(stderr, "libev event loop unavailable, using poll()\n");
	return run_poll((int)port) ? 1 : 0;
}
