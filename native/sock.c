/*
 * The socket layer both native loops share (rig-respond-native,
 * rig-send-native): the command line's addresses, every socket call
 * through libc (counted for the handoff), the socket's SO_TIMESTAMPING as
 * rig planned it, stamp parsing, sends keyed for their TX stamps; setup
 * errors, numbers and the thread's placement are pin.c's.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rig.h"
#include "sock.h"

#ifndef SO_TIMESTAMPING_OLD
#define SO_TIMESTAMPING_OLD 37
#endif
#ifndef SO_TIMESTAMPING_NEW
#define SO_TIMESTAMPING_NEW 65
#endif
#ifndef SCM_TS_OPT_ID
#define SCM_TS_OPT_ID 81 /* Linux 6.13 */
#endif
#ifndef SOL_PACKET
#define SOL_PACKET 263
#endif
#define PACKET_TX_TIMESTAMP_ 16

enum { COUNTER_RING = 8192 }; /* tstamp's counterRing */

struct sockcfg sk = {.cpu = -1, .ready_fd = -1, .tx_wait_ns = 500000000};
int fd = -1;
uint64_t calls[NCALLS];
int (*sock_send)(struct msghdr *m);
uint32_t ts_granted, ts_dropped;
int ts_old, ts_assumed, want_sw, want_hw, want_hw_rx, sw_kind;
enum keying keying;
int hw_tx_seen, stop_proof;

static int64_t hw_first;
static uint64_t hw_sends;
static int hw_rx_done;
static uint64_t hw_rx_n;

static uint32_t kcounter;
static int per_send_ok;
static uint64_t kring[COUNTER_RING];
static union { uint8_t b[64]; struct cmsghdr align; } tx_oob;

/* die reports on the ready pipe the command line gave. */
const int *const die_fd = &sk.ready_fd;
const char *const *const die_prog = &sk.prog;

/* Every socket call goes through libc; these count them for the handoff. */
int sopt(int level, int opt, const void *v, socklen_t len)
{
	calls[CALL_SETSOCKOPT]++;
	return setsockopt(fd, level, opt, v, len);
}

int sopt_int(int level, int opt, int v) { return sopt(level, opt, &v, sizeof v); }

ssize_t recv_msg(struct msghdr *m, int flags)
{
	calls[CALL_RECVMSG]++;
	return recvmsg(fd, m, flags);
}

void addr(const char *name, const char *s, struct sockaddr_in *sa, int *has)
{
	char host[64];
	const char *colon = strrchr(s, ':');
	if (!colon || (size_t)(colon - s) >= sizeof host)
		die(2, "--%s %s: want an IPv4 address:port", name, s);
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	memset(sa, 0, sizeof *sa);
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)num(name, colon + 1, 65535));
	if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
		die(2, "--%s %s: want an IPv4 address:port", name, s);
	*has = 1;
}

/* sockfail reports a failed socket call: a missing privilege or device is
 * refused (exit 2, as rig's own setup errors), anything else failed. */
void sockfail(const char *what)
{
	int e = errno;
	if (e == EPERM || e == EACCES)
		die(2, "%s: %s (needs root or CAP_NET_RAW/CAP_NET_ADMIN)", what, strerror(e));
	if (e == ENODEV)
		die(2, "%s: %s (interface %s)", what, strerror(e), sk.iface);
	die(1, "%s: %s", what, strerror(e));
}

static uint32_t highest_bit(uint32_t v)
{
	uint32_t b = 1u << 31;
	while (b && !(v & b))
		b >>= 1;
	return b;
}

/* timestamping sets what rig asked for as tstamp.setTimestamping does:
 * SO_TIMESTAMPING_NEW, else the old option where the new one is unknown;
 * the optional bits the kernel refuses dropped one at a time, highest
 * first; then the flags read back. */
void timestamping(void)
{
	if (!sk.ts_flags)
		return; /* --timestamps off */
	uint32_t want = sk.ts_flags;
	int opt = SO_TIMESTAMPING_NEW;
	while (sopt_int(SOL_SOCKET, opt, (int)want) < 0) {
		if (opt == SO_TIMESTAMPING_NEW && errno == ENOPROTOOPT) {
			opt = SO_TIMESTAMPING_OLD;
			ts_old = 1;
		} else if (errno == EINVAL && (want & sk.ts_optional)) {
			uint32_t bit = highest_bit(want & sk.ts_optional);
			want &= ~bit;
			ts_dropped |= bit;
		} else {
			die(1, "setsockopt(%s, %#x): %s", ts_old ? "SO_TIMESTAMPING" : "SO_TIMESTAMPING_NEW", want, strerror(errno));
		}
	}
	int got[2] = {0, 0};
	socklen_t len = sizeof got;
	int r = getsockopt(fd, SOL_SOCKET, opt, got, &len);
	if (r < 0 && errno == ENOPROTOOPT) {
		len = sizeof got;
		r = getsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING_OLD, got, &len);
		if (r < 0) {
			got[0] = (int)want;
			ts_assumed = 1;
			r = 0;
			len = sizeof got;
		}
	}
	if (r < 0)
		die(1, "getsockopt(SO_TIMESTAMPING): %s", strerror(errno));
	if (len < 4)
		die(1, "getsockopt(SO_TIMESTAMPING) returned %u bytes, want 4 or 8", (unsigned)len);
	ts_granted = (uint32_t)got[0];
	const uint32_t hw = SOF_TIMESTAMPING_TX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
	want_sw = (ts_granted & SOF_TIMESTAMPING_SOFTWARE) != 0;
	const uint32_t hwrx = SOF_TIMESTAMPING_RX_HARDWARE | SOF_TIMESTAMPING_RAW_HARDWARE;
	want_hw = sk.hw_tx && (ts_granted & hw) == hw;
	want_hw_rx = sk.hw_rx && (ts_granted & hwrx) == hwrx;
	/* The software TX stamp is the SND one, or the qdisc's (SCHED) where
	 * Go's plan says the driver gives none (--tx-sw sched,
	 * tstamp.Granted.SWTx): the choice is made once, on the Go side. */
	sw_kind = sk.tx_sched ? SCM_TSTAMP_SCHED : SCM_TSTAMP_SND;
	if (ts_granted & SOF_TIMESTAMPING_OPT_ID)
		keying = KEY_PER_SEND;
}

/* ---- stamps ---- */

static int64_t ts_ns(const uint8_t *d)
{
	int64_t sec, nsec;
	memcpy(&sec, d, 8);
	memcpy(&nsec, d + 8, 8);
	return (int64_t)((uint64_t)sec * 1000000000u + (uint64_t)nsec);
}

/* cmsg_next steps through control messages as tstamp's cmsgNext does:
 * it stops at a header too short or too long for what is left. */
static int cmsg_next(const uint8_t **b, size_t *len, struct cmsghdr *h, const uint8_t **data, size_t *dlen)
{
	if (*len < sizeof *h)
		return 0;
	memcpy(h, *b, sizeof *h);
	if (h->cmsg_len < CMSG_LEN(0) || h->cmsg_len > *len)
		return 0;
	*data = *b + CMSG_LEN(0);
	*dlen = h->cmsg_len - CMSG_LEN(0);
	size_t step = CMSG_SPACE(*dlen);
	if (step > *len)
		step = *len;
	*b += step;
	*len -= step;
	return 1;
}

static int is_ts(const struct cmsghdr *h)
{
	return h->cmsg_level == SOL_SOCKET && (h->cmsg_type == SO_TIMESTAMPING_OLD || h->cmsg_type == SO_TIMESTAMPING_NEW);
}

/* rx_stamps reads the RX stamps (tstamp.ParseRx). */
void rx_stamps(const uint8_t *b, size_t len, int64_t *sw, int64_t *hw)
{
	struct cmsghdr h;
	const uint8_t *d;
	size_t dl;
	*sw = *hw = 0;
	while (cmsg_next(&b, &len, &h, &d, &dl))
		if (is_ts(&h) && dl >= 48) {
			*sw = ts_ns(d);
			*hw = ts_ns(d + 32);
		}
}

/* tx_stamp reads one error-queue entry (tstamp.ParseErrqueue): 1 for a TX stamp. */
int tx_stamp(const uint8_t *b, size_t len, struct txst *t)
{
	struct cmsghdr h;
	const uint8_t *d;
	size_t dl;
	int have_ts = 0, have_err = 0;
	while (cmsg_next(&b, &len, &h, &d, &dl)) {
		if (is_ts(&h) && dl >= 48) {
			t->sw = ts_ns(d);
			t->hw = ts_ns(d + 32);
			have_ts = 1;
		} else if (((h.cmsg_level == SOL_IP && h.cmsg_type == IP_RECVERR) ||
			    (h.cmsg_level == SOL_IPV6 && h.cmsg_type == IPV6_RECVERR) ||
			    (h.cmsg_level == SOL_PACKET && h.cmsg_type == PACKET_TX_TIMESTAMP_)) &&
			   dl >= sizeof(struct sock_extended_err)) {
			struct sock_extended_err ee;
			memcpy(&ee, d, sizeof ee);
			if (ee.ee_origin != SO_EE_ORIGIN_TIMESTAMPING || ee.ee_errno != ENOMSG)
				return 0;
			t->kind = ee.ee_info;
			t->key = ee.ee_data;
			have_err = 1;
		}
	}
	return have_ts && have_err;
}


/* send_once sends m through the loop's own way (sock_send), else libc. */
static int send_once(struct msghdr *m)
{
	if (sock_send)
		return sock_send(m);
	calls[CALL_SENDMSG]++;
	return sendmsg(fd, m, 0) < 0 ? errno : 0;
}

/* send_counted sends without a key in counter mode: the kernel numbers
 * datagrams, the ring maps its number back to key (tstamp.sendCounted). */
static int send_counted(struct msghdr *m, uint32_t key)
{
	m->msg_control = NULL;
	m->msg_controllen = 0;
	kring[kcounter % COUNTER_RING] = 1ull << 63 | (uint64_t)(kcounter / COUNTER_RING) << 32 | key;
	int e = send_once(m);
	if (e == 0)
		kcounter++;
	return e;
}

int send_keyed(struct msghdr *m, uint32_t key)
{
	switch (keying) {
	case KEY_PER_SEND: {
		struct cmsghdr h = {.cmsg_len = CMSG_LEN(4), .cmsg_level = SOL_SOCKET, .cmsg_type = SCM_TS_OPT_ID};
		memcpy(tx_oob.b, &h, sizeof h);
		memcpy(CMSG_DATA((struct cmsghdr *)tx_oob.b), &key, 4);
		m->msg_control = tx_oob.b;
		m->msg_controllen = CMSG_SPACE(4);
		int e = send_once(m);
		if (e == 0)
			per_send_ok = 1;
		if (e != EINVAL || per_send_ok)
			return e;
		keying = KEY_COUNTER; /* a kernel before 6.13 */
		if ((e = send_counted(m, key)) != 0)
			keying = KEY_PER_SEND;
		return e;
	}
	case KEY_COUNTER:
		return send_counted(m, key);
	case KEY_NONE:
		break;
	}
	m->msg_control = NULL;
	m->msg_controllen = 0;
	return send_once(m);
}

int tx_key(const struct txst *t, uint32_t *key)
{
	*key = t->key;
	if (keying != KEY_COUNTER)
		return 1;
	uint64_t v = kring[*key % COUNTER_RING];
	if ((v & ~0xFFFFFFFFull) != (1ull << 63 | (uint64_t)(*key / COUNTER_RING) << 32))
		return 0; /* older than the ring: tstamp.ErrUnknownKey */
	*key = (uint32_t)v;
	return 1;
}

void tx_file(const struct txst *t, int64_t *sw, int64_t *hw)
{
	if ((int)t->kind == sw_kind && t->sw)
		*sw = t->sw;
	if (t->kind == SCM_TSTAMP_SND && t->hw) {
		*hw = t->hw;
		hw_tx_seen = 1;
	}
}

/* The hardware-stamp proof, as far as the loop needs it (rig replays
 * tstamp.HWProof over the records for the file): after --hw-window
 * packets of a direction without one hardware stamp (TX: the first sent
 * older than the wait), the loop stops awaiting that direction's stamps,
 * and with --hw-fail (--timestamps hardware) stops. */
static void hw_absent(void)
{
	if (sk.hw_fail)
		stop_proof = 1;
}

void hw_sent(int64_t now)
{
	if (!want_hw || hw_tx_seen || !sk.hw_window)
		return;
	if (hw_sends++ == 0)
		hw_first = now;
	if (hw_sends >= (uint64_t)sk.hw_window && now - hw_first >= sk.tx_wait_ns) {
		want_hw = 0;
		hw_absent();
	}
}

void hw_received(int64_t hw)
{
	if (!want_hw_rx || hw_rx_done || !sk.hw_window)
		return;
	if (hw || ++hw_rx_n >= (uint64_t)sk.hw_window) {
		hw_rx_done = 1;
		if (!hw)
			hw_absent();
	}
}

int set_rcvbuf(int want)
{
	/* tstamp.SetRcvBuf: past rmem_max with CAP_NET_ADMIN, else capped. */
	if (sopt_int(SOL_SOCKET, SO_RCVBUFFORCE, want) < 0) {
		if (errno != EPERM)
			sockfail("SO_RCVBUFFORCE");
		if (sopt_int(SOL_SOCKET, SO_RCVBUF, want) < 0)
			sockfail("SO_RCVBUF");
	}
	int got = 0;
	socklen_t len = sizeof got;
	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &len) < 0)
		sockfail("getsockopt(SO_RCVBUF)");
	return got;
}

void place(void) { pin_thread(sk.cpu, sk.fifo); }

/* presence asks the preloaded stack itself whether it is loaded: its
 * function looked up in the process (dlsym, no link dependency), called
 * after the socket is set up. "yes", "no", or "absent" (no such function). */
static const char *presence(void)
{
	int (*f)(void);
	*(void **)&f = dlsym(RTLD_DEFAULT, sk.presence);
	return !f ? "absent" : f() ? "yes" : "no";
}

/* onload_stat is Onload's (extensions.h): what onload_fd_stat fills. */
struct onload_stat {
	int32_t stack_id;
	char *stack_name; /* malloc'd by the stack: the caller frees it */
	int32_t endpoint_id;
	int32_t endpoint_state;
};

/* fd_stat asks the stack whether it took this socket, as onload_fd_stat
 * does: 1 accelerated (in stack id and name), 0 left to the kernel, < 0
 * an error. Once, in setup: the name it allocates is freed here. */
static void fd_stat(char *out, size_t n)
{
	int (*f)(int, struct onload_stat *);
	*(void **)&f = dlsym(RTLD_DEFAULT, sk.fd_stat);
	struct onload_stat st = {0};
	int r = f ? f(fd, &st) : 0;
	if (!f)
		snprintf(out, n, " accelerated=absent");
	else if (r < 0)
		snprintf(out, n, " accelerated=error:%ld", -(long)r);
	else if (r == 0)
		snprintf(out, n, " accelerated=no");
	else {
		/* The name is one field of the ready line: no spaces in it. */
		for (char *p = st.stack_name; p && *p; p++)
			if (*p <= ' ' || *p > '~')
				*p = '?';
		snprintf(out, n, " accelerated=yes stack=%.32s id=%d", st.stack_name && *st.stack_name ? st.stack_name : "-", st.stack_id);
	}
	free(st.stack_name);
}

void stack_checks(char *out, size_t n)
{
	size_t used = 0;
	out[0] = 0;
	if (sk.presence)
		used = (size_t)snprintf(out, n, " presence=%s", presence());
	if (sk.fd_stat && used < n)
		fd_stat(out + used, n - used);
}
