/*
 * rig-respond-native: rig respond's measuring loop as a program of its own,
 * spawned by `rig respond --engine native` (docs/probes.md#the-native-engine).
 *
 * rig decides everything before the loop (the NIC's timestamping, the
 * socket's SO_TIMESTAMPING flags, the CPU) and passes it here as numbers;
 * this program opens the socket through libc (so that a kernel-bypass
 * stack preloaded in front of libc can take it over; sock.c, shared with
 * rig-send-native), answers requests as
 * responder/responder.go does, and hands its records back to rig, which
 * alone writes sample files (handoff.c). The command line is rig's, not a
 * user's: responder/native.go builds it.
 *
 * Its readiness and failures go to --ready-fd as one line: "ready k=v …"
 * once the socket is set up and the loop starts (with --presence FUNC,
 * "presence=yes|no|absent": what the preloaded stack's own check said; with
 * --fd-stat FUNC, "accelerated=yes stack=NAME id=N|no|absent|error:N": what
 * its per-socket check said of this socket), or "refused MESSAGE"
 * (bad input, a missing privilege, a backend this host cannot run; exit 2)
 * or "failed MESSAGE" (exit 1). SIGINT or SIGTERM ends the loop; it then
 * waits up to --tx-wait-ns for the last replies' TX stamps and writes the
 * handoff to --out-fd.
 *
 * Nothing in the loop allocates: the records are one mapping made before
 * it, the buffers are static.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rig.h"
#include "sock.h"
#include "uring.h"

#ifndef SO_INCOMING_NAPI_ID
#define SO_INCOMING_NAPI_ID 56
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL 69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET 70
#endif

#ifndef RIG_COMMIT
#define RIG_COMMIT "unknown"
#endif

enum poll { P_BLOCK, P_BUSY, P_BUSY_POLL, P_PREFER_BUSY_POLL, P_EPOLL, P_URING, P_URING_SQPOLL };
static const char *const poll_names[] = {"block", "busy", "busy-poll", "prefer-busy-poll", "epoll", "io-uring", "io-uring-sqpoll"};

enum { WAIT_MS = 50 }; /* how long a blocking wait lasts before it looks at stop */

/* What the command line sets besides sk (sock.c). */
static struct cfg {
	struct sockaddr_in group, listen, reply;
	int has_group, has_listen, has_reply;
	uint32_t id, arm, round;
	uint64_t run_id, capacity, count;
	enum poll poll;
	int busy_poll_us, budget;
	int rcvbuf;
	int out_fd;
} c = {.out_fd = -1, .budget = 64};

static int ep = -1;
static struct uring ring;
static volatile sig_atomic_t stop_signal;
static int stop_count, failed;
static char fail_msg[512];

static struct rec *recs, *last;
static uint64_t cnt[H_NFIELDS]; /* the handoff header's counters */


static uint8_t buf[2048];
static union { uint8_t b[256]; struct cmsghdr align; } rx_oob, eq_oob;
static struct sockaddr_in rx_name, tx_name;
static uint8_t eq_buf[64];
static struct iovec rx_iov = {buf, sizeof buf}, eq_iov = {eq_buf, sizeof eq_buf}, tx_iov = {buf, 0};
static struct msghdr rx_msg = {.msg_name = &rx_name, .msg_iov = &rx_iov, .msg_iovlen = 1, .msg_control = rx_oob.b};
static struct msghdr eq_msg = {.msg_iov = &eq_iov, .msg_iovlen = 1, .msg_control = eq_oob.b};
static struct msghdr tx_msg = {.msg_name = &tx_name, .msg_namelen = sizeof tx_name, .msg_iov = &tx_iov, .msg_iovlen = 1};


/* fail ends the loop with an error, after which the handoff is still written. */
static void fail(const char *what, int err)
{
	snprintf(fail_msg, sizeof fail_msg, "%s: %s", what, strerror(err));
	failed = 1;
}


/* ---- command line ---- */


static void args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"iface", 1, 0, 'i'}, {"ifindex", 1, 0, 'x'}, {"group", 1, 0, 'g'}, {"listen", 1, 0, 'l'},
		{"reply", 1, 0, 'r'}, {"id", 1, 0, 'I'}, {"run-id", 1, 0, 'R'}, {"arm-index", 1, 0, 'a'},
		{"round", 1, 0, 'o'}, {"cpu", 1, 0, 'c'}, {"fifo", 1, 0, 'f'}, {"poll", 1, 0, 'p'},
		{"busy-poll-us", 1, 0, 'b'}, {"busy-poll-budget", 1, 0, 'B'}, {"ts-flags", 1, 0, 't'},
		{"ts-optional", 1, 0, 'T'}, {"hw-tx", 1, 0, 'h'}, {"hw-window", 1, 0, 'w'}, {"capacity", 1, 0, 'C'},
		{"hw-rx", 1, 0, 'H'}, {"hw-fail", 1, 0, 'F'}, {"tx-sw", 1, 0, 'S'},
		{"count", 1, 0, 'n'}, {"tx-wait-ns", 1, 0, 'W'}, {"rcvbuf", 1, 0, 's'}, {"ready-fd", 1, 0, 'y'},
		{"out-fd", 1, 0, 'O'}, {"presence", 1, 0, 'P'}, {"fd-stat", 1, 0, 'd'}, {"version", 0, 0, 'V'}, {0, 0, 0, 0},
	};
	int o, ix;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, &ix)) != -1) {
		const char *v = optarg;
		switch (o) {
		case 'i': sk.iface = v; break;
		case 'x': sk.ifindex = (int)num("ifindex", v, INT_MAX); break;
		case 'g': addr("group", v, &c.group, &c.has_group); break;
		case 'l': addr("listen", v, &c.listen, &c.has_listen); break;
		case 'r': addr("reply", v, &c.reply, &c.has_reply); break;
		case 'I': c.id = (uint32_t)num("id", v, UINT32_MAX); break;
		case 'R': {
			char *end;
			errno = 0;
			c.run_id = strtoull(v, &end, 16);
			if (errno || *end || end == v || c.run_id == 0)
				die(2, "--run-id %s: want 1 to 16 hex digits, not zero", v);
			break;
		}
		case 'a': c.arm = (uint32_t)num("arm-index", v, UINT32_MAX); break;
		case 'o': c.round = (uint32_t)num("round", v, UINT32_MAX); break;
		case 'c': sk.cpu = strcmp(v, "-1") == 0 ? -1 : (int)num("cpu", v, CPU_SETSIZE - 1); break;
		case 'f': sk.fifo = (int)num("fifo", v, 99); break;
		case 'p': {
			size_t k = 0;
			while (k < sizeof poll_names / sizeof *poll_names && strcmp(v, poll_names[k]) != 0)
				k++;
			if (k == sizeof poll_names / sizeof *poll_names)
				die(2, "--poll %s: unknown backend", v);
			c.poll = (enum poll)k;
			break;
		}
		case 'b': c.busy_poll_us = (int)num("busy-poll-us", v, 1000000); break;
		case 'B': c.budget = (int)num("busy-poll-budget", v, 65535); break;
		case 't': sk.ts_flags = (uint32_t)num("ts-flags", v, UINT32_MAX); break;
		case 'T': sk.ts_optional = (uint32_t)num("ts-optional", v, UINT32_MAX); break;
		case 'h': sk.hw_tx = (int)num("hw-tx", v, 1); break;
		case 'w': sk.hw_window = (int)num("hw-window", v, 1 << 20); break;
		case 'H': sk.hw_rx = (int)num("hw-rx", v, 1); break;
		case 'F': sk.hw_fail = (int)num("hw-fail", v, 1); break;
		case 'S':
			if (strcmp(v, "sched") && strcmp(v, "snd"))
				die(2, "--tx-sw %s: want snd or sched", v);
			sk.tx_sched = !strcmp(v, "sched");
			break;
		case 'C': c.capacity = num("capacity", v, 1ull << 30); break;
		case 'n': c.count = num("count", v, UINT64_MAX); break;
		case 'W': sk.tx_wait_ns = (int64_t)num("tx-wait-ns", v, INT64_MAX); break;
		case 's': c.rcvbuf = (int)num("rcvbuf", v, INT_MAX); break;
		case 'y': sk.ready_fd = (int)num("ready-fd", v, INT_MAX); break;
		case 'O': c.out_fd = (int)num("out-fd", v, INT_MAX); break;
		case 'P': sk.presence = v; break;
		case 'd': sk.fd_stat = v; break;
		case 'V':
			printf("rig-respond-native commit %s, handoff format %d, wire format %d\n", RIG_COMMIT, HANDOFF_VERSION, WIRE_VERSION);
			exit(0);
		default: die(2, "unknown or incomplete argument %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die(2, "unexpected argument %s", argv[optind]);
	if (!sk.iface || !sk.ifindex || c.has_group == c.has_listen || !c.run_id || !c.capacity || c.out_fd < 0)
		die(2, "needs --iface, --ifindex, --group or --listen, --run-id, --capacity and --out-fd (rig respond --engine native builds this command line)");
}

/* ---- the socket ---- */


static int setup_socket(void)
{
	int type = SOCK_DGRAM | SOCK_CLOEXEC | (c.poll == P_BUSY ? SOCK_NONBLOCK : 0);
	calls[CALL_SOCKET]++;
	fd = socket(AF_INET, type, IPPROTO_UDP);
	if (fd < 0)
		sockfail("socket(AF_INET, SOCK_DGRAM)");
	if (sopt_int(SOL_SOCKET, SO_REUSEADDR, 1) < 0)
		sockfail("SO_REUSEADDR");
	if (sopt(SOL_SOCKET, SO_BINDTODEVICE, sk.iface, (socklen_t)strlen(sk.iface) + 1) < 0)
		sockfail("SO_BINDTODEVICE");
	struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = c.group.sin_port};
	if (c.has_listen)
		la = c.listen;
	if (bind(fd, (struct sockaddr *)&la, sizeof la) < 0)
		sockfail("bind");
	timestamping();
	struct ip_mreqn mr = {.imr_ifindex = sk.ifindex};
	if (c.has_group) {
		mr.imr_multiaddr = c.group.sin_addr;
		if (sopt(IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
			sockfail("IP_ADD_MEMBERSHIP");
		mr.imr_multiaddr.s_addr = 0;
	}
	if (sopt(IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof mr) < 0)
		sockfail("IP_MULTICAST_IF");
	if (sopt_int(IPPROTO_IP, IP_MULTICAST_LOOP, 0) < 0)
		sockfail("IP_MULTICAST_LOOP");
	int rcvbuf = set_rcvbuf(c.rcvbuf);
	if (c.poll == P_BUSY_POLL || c.poll == P_PREFER_BUSY_POLL)
		if (sopt_int(SOL_SOCKET, SO_BUSY_POLL, c.busy_poll_us) < 0)
			sockfail("SO_BUSY_POLL");
	if (c.poll == P_PREFER_BUSY_POLL) {
		if (sopt_int(SOL_SOCKET, SO_PREFER_BUSY_POLL, 1) < 0) {
			if (errno == ENOPROTOOPT || errno == EINVAL)
				die(2, "poll prefer-busy-poll: this kernel does not know SO_PREFER_BUSY_POLL (%s; Linux 5.11)", strerror(errno));
			sockfail("SO_PREFER_BUSY_POLL");
		}
		if (sopt_int(SOL_SOCKET, SO_BUSY_POLL_BUDGET, c.budget) < 0)
			sockfail("SO_BUSY_POLL_BUDGET");
	}
	if (c.poll == P_BLOCK || c.poll == P_BUSY_POLL || c.poll == P_PREFER_BUSY_POLL) {
		/* Block waits inside recvmsg, as sockperf's server does; the
		 * timeout lets the loop see a stop the signal raced past. */
		struct timeval tv = {0, WAIT_MS * 1000};
		if (sopt(SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0)
			sockfail("SO_RCVTIMEO");
	}
	return rcvbuf;
}


/* awaits: r was sent and lacks a TX stamp it wants (samples.TxColumns.Awaits). */
static int awaits(const struct rec *r)
{
	return r->t[REP_TX_USER] && ((want_sw && !r->t[REP_TX_SW]) || (want_hw && !r->t[REP_TX_HW]));
}

/* tx_awaited: the last reply still awaits its TX stamp; past the
 * capacity nothing tells, so the queue is read every time. */
static int tx_awaited(void) { return last ? awaits(last) : cnt[H_SENT] > 0; }

static void file_tx(const struct txst *t)
{
	uint32_t key;
	if (!tx_key(t, &key) || key >= c.capacity)
		return;
	tx_file(t, &recs[key].t[REP_TX_SW], &recs[key].t[REP_TX_HW]);
}

/* ---- one operation of each kind, on the socket or through the ring ---- */

enum { TAG_DATA = 1, TAG_ERRQ, TAG_SEND, NTAGS };
static struct {
	int done;
	int32_t res;
	int64_t at;
} slot[NTAGS];
static int rx_pending;

static int uring_mode(void) { return c.poll == P_URING || c.poll == P_URING_SQPOLL; }

/* ring_wait waits for tag's completion (1), stashing others; the data tag
 * gives up after one wait (0): the loop looks at stop. */
static int ring_wait(uint64_t tag)
{
	static const struct timespec wait = {0, WAIT_MS * 1000000};
	while (!slot[tag].done) {
		uint64_t t;
		int32_t res;
		int r = uring_reap(&ring, c.poll == P_URING ? &wait : NULL, &t, &res);
		if (r < 0) {
			fail("io_uring_enter", errno);
			return 0;
		}
		if (r == 0) {
			if (tag == TAG_DATA)
				return 0;
			continue;
		}
		if (t < NTAGS) {
			slot[t].done = 1;
			slot[t].res = res;
			slot[t].at = now_ns(CLOCK_REALTIME);
		}
	}
	slot[tag].done = 0;
	return 1;
}

/* ring_op runs one recvmsg or sendmsg through the ring: its result, or -errno. */
static int32_t ring_op(struct msghdr *m, unsigned flags, int send, uint64_t tag)
{
	if (uring_submit(&ring, fd, m, flags, send, tag) < 0)
		return -errno;
	if (!ring_wait(tag))
		return -EIO;
	return slot[tag].res;
}

/* errq_read reads one error-queue entry: 0 and its control length, or -1. */
static int errq_read(size_t *ooblen, int via_ring)
{
	eq_msg.msg_controllen = sizeof eq_oob.b;
	eq_msg.msg_flags = 0;
	if (via_ring) {
		/* The ring does not write msg_controllen back everywhere: walk a
		 * zeroed buffer, which ends at the first empty header. */
		memset(eq_oob.b, 0, sizeof eq_oob.b);
		*ooblen = sizeof eq_oob.b;
		return ring_op(&eq_msg, MSG_ERRQUEUE | MSG_DONTWAIT, 0, TAG_ERRQ) < 0 ? -1 : 0;
	}
	if (recv_msg(&eq_msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
		return -1;
	*ooblen = eq_msg.msg_controllen;
	return 0;
}

/* read_tx files TX stamps until the last reply's is filed (until_filed) or
 * the queue is empty: one read per stamp (tstamp.Conn.ReadTx). */
static void read_tx(int until_filed, int via_ring, int in_loop)
{
	for (;;) {
		if (until_filed && !tx_awaited())
			return;
		size_t len;
		int r = errq_read(&len, via_ring);
		if (in_loop)
			cnt[H_CALLS_TX_READS]++;
		if (r < 0)
			return;
		struct txst t = {0};
		if (tx_stamp(eq_oob.b, len, &t))
			file_tx(&t);
	}
}

/* ring_send is sock_send in the io_uring modes. */
static int ring_send(struct msghdr *m)
{
	int32_t r = ring_op(m, 0, 1, TAG_SEND);
	return r < 0 ? -r : 0;
}
/* send_reply sends buf[0:n] to dst with TX stamps keyed key. */
static int send_reply(size_t n, const struct sockaddr_in *dst, uint32_t key)
{
	tx_name = *dst;
	tx_iov.iov_len = n;
	return send_keyed(&tx_msg, key);
}

/* ---- the loop ---- */

/* datagram answers one received datagram (responder.step after its wait). */
static void datagram(size_t n, int trunc, int from_ok, const uint8_t *oob, size_t ooblen, int64_t user)
{
	struct wire_hdr h;
	if (trunc) {
		cnt[H_MALFORMED]++;
		return;
	}
	enum wire_err e = wire_decode(buf, n, c.run_id, &h);
	if (e != WIRE_OK) {
		cnt[wire_foreign(e) ? H_FOREIGN : H_MALFORMED]++;
		return;
	}
	if (h.type != WIRE_REQUEST || h.arm != c.arm || h.round != c.round) {
		cnt[H_FOREIGN]++; /* a reply, or another arm's or round's request */
		return;
	}
	cnt[H_RECEIVED]++;
	int64_t sw, hw;
	rx_stamps(oob, ooblen, &sw, &hw);
	hw_received(hw);
	struct rec *r = NULL;
	if (h.seq < c.capacity) {
		r = &recs[h.seq];
		if (r->t[REQ_RX_USER]) {
			r->flags |= FLAG_DUPLICATE;
			cnt[H_DUPLICATED]++;
			return; /* answer each sequence once */
		}
		r->t[REQ_RX_SW] = sw;
		r->t[REQ_RX_HW] = hw;
		r->t[REQ_RX_USER] = user;
	} else {
		cnt[H_OUT_OF_RANGE]++;
	}
	wire_make_reply(buf, c.id);
	if (!c.has_reply && !from_ok) {
		cnt[H_SEND_ERRORS]++; /* no IPv4 source to answer */
		return;
	}
	int64_t tx_user = now_ns(CLOCK_REALTIME);
	if (send_reply(n, c.has_reply ? &c.reply : &rx_name, (uint32_t)h.seq) != 0) {
		cnt[H_SEND_ERRORS]++;
		return;
	}
	cnt[H_SENT]++;
	last = r;
	if (r)
		r->t[REP_TX_USER] = tx_user;
	hw_sent(tx_user);
	if (c.count && cnt[H_SENT] >= c.count)
		stop_count = 1;
}

static int stopped(void) { return stop_signal || stop_count || stop_proof || failed; }

static void loop_socket(void)
{
	while (!stopped()) {
		if (want_sw || want_hw)
			read_tx(1, 0, 1);
		int flags = c.poll == P_BUSY ? MSG_DONTWAIT : 0;
		if (c.poll == P_EPOLL) {
			struct epoll_event ev;
			cnt[H_CALLS_WAITS]++;
			int n = epoll_wait(ep, &ev, 1, WAIT_MS);
			if (n < 0 && errno != EINTR) {
				fail("epoll_wait", errno);
				break;
			}
			if (n <= 0)
				continue;
			if (!(ev.events & EPOLLIN)) {
				read_tx(0, 0, 1); /* a stamp nobody awaited: drain it */
				continue;
			}
			flags = MSG_DONTWAIT;
		}
		rx_msg.msg_namelen = sizeof rx_name;
		rx_msg.msg_controllen = sizeof rx_oob.b;
		rx_msg.msg_flags = 0;
		ssize_t n = recv_msg(&rx_msg, flags);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			fail("recvmsg", errno);
			break;
		}
		int64_t user = now_ns(CLOCK_REALTIME);
		int from_ok = rx_msg.msg_namelen >= sizeof rx_name && rx_name.sin_family == AF_INET;
		datagram((size_t)n, (rx_msg.msg_flags & MSG_TRUNC) != 0, from_ok, rx_oob.b, rx_msg.msg_controllen, user);
	}
}

static void loop_ring(void)
{
	while (!stopped()) {
		if (want_sw || want_hw)
			read_tx(1, 1, 1);
		if (failed)
			break;
		if (!rx_pending) {
			memset(rx_oob.b, 0, sizeof rx_oob.b);
			memset(&rx_name, 0, sizeof rx_name);
			rx_msg.msg_namelen = sizeof rx_name;
			rx_msg.msg_controllen = sizeof rx_oob.b;
			rx_msg.msg_flags = 0;
			/* MSG_TRUNC: the result is the datagram's length, so a
			 * truncated one shows without msg_flags. */
			if (uring_submit(&ring, fd, &rx_msg, MSG_TRUNC, 0, TAG_DATA) < 0) {
				fail("io_uring_enter", errno);
				break;
			}
			rx_pending = 1;
		}
		if (!ring_wait(TAG_DATA))
			continue;
		rx_pending = 0;
		int32_t res = slot[TAG_DATA].res;
		if (res < 0) {
			if (res == -EAGAIN || res == -EINTR)
				continue;
			fail("io_uring recvmsg", -res);
			break;
		}
		int from_ok = rx_name.sin_family == AF_INET;
		size_t n = (size_t)res < sizeof buf ? (size_t)res : sizeof buf;
		datagram(n, (size_t)res > sizeof buf, from_ok, rx_oob.b, sizeof rx_oob.b, slot[TAG_DATA].at);
	}
}

/* ---- the thread ---- */

static void on_signal(int sig) { stop_signal = sig; }


int main(int argc, char **argv)
{
	sk.prog = "rig-respond-native";
	args(argc, argv);
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: a signal ends a blocking wait */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int rcvbuf = setup_socket();
	char why[512];
	if (uring_mode() && uring_open(&ring, c.poll == P_URING_SQPOLL, why, sizeof why) < 0)
		die(2, "poll %s: %s", poll_names[c.poll], why);
	if (uring_mode())
		sock_send = ring_send;
	if (c.poll == P_EPOLL) {
		struct epoll_event ev = {.events = EPOLLIN | EPOLLERR};
		if ((ep = epoll_create1(EPOLL_CLOEXEC)) < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			die(1, "epoll: %s", strerror(errno));
	}
	size_t size = c.capacity * sizeof *recs;
	recs = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (recs == MAP_FAILED)
		die(1, "%" PRIu64 " records: %s", c.capacity, strerror(errno));
	/* After the ring: its SQ thread must not inherit the CPU or the policy. */
	place();
	int mlock_err = mlockall(MCL_CURRENT | MCL_FUTURE) < 0 ? errno : 0;
	char stack[160];
	stack_checks(stack, sizeof stack);
	if (dprintf(sk.ready_fd, "ready tid=%d ts_flags=%#x ts_old=%d ts_dropped=%#x ts_assumed=%d rcvbuf=%d mlockall=%d%s\n",
		    (int)gettid(), ts_granted, ts_old, ts_dropped, ts_assumed, rcvbuf, mlock_err, stack) < 0)
		die(1, "ready pipe: %s", strerror(errno));

	struct rusage ru0, ru1;
	int ru_ok = getrusage(RUSAGE_THREAD, &ru0) == 0;
	int64_t mono0 = now_ns(CLOCK_MONOTONIC);
	cnt[H_LOOP_START] = (uint64_t)now_ns(CLOCK_REALTIME);
	if (rig_native_phase)
		rig_native_phase(1);
	if (uring_mode())
		loop_ring();
	else
		loop_socket();
	if (rig_native_phase)
		rig_native_phase(2);
	cnt[H_LOOP_END] = (uint64_t)now_ns(CLOCK_REALTIME);
	int64_t mono1 = now_ns(CLOCK_MONOTONIC);
	ru_ok = ru_ok && getrusage(RUSAGE_THREAD, &ru1) == 0;

	/* The last replies' TX stamps (responder.loop's wait). */
	for (int64_t end = mono1 + sk.tx_wait_ns; now_ns(CLOCK_MONOTONIC) < end;) {
		int missing = 0;
		for (uint64_t i = 0; i < c.capacity && !missing; i++)
			missing = awaits(&recs[i]);
		if (!missing)
			break;
		read_tx(0, 0, 0);
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	uint32_t napi = 0;
	socklen_t len = sizeof napi;
	getsockopt(fd, SOL_SOCKET, SO_INCOMING_NAPI_ID, &napi, &len);

	for (uint64_t i = 0; i < c.capacity; i++)
		cnt[H_RECORDS] += recs[i].t[REQ_RX_USER] != 0;
	cnt[H_CAPACITY] = c.capacity;
	cnt[H_THREAD_OK] = (uint64_t)ru_ok;
	if (ru_ok) {
		cnt[H_THREAD_WALL] = (uint64_t)(mono1 - mono0);
		cnt[H_THREAD_CPU] = (uint64_t)(tv_ns(ru1.ru_utime) + tv_ns(ru1.ru_stime) - tv_ns(ru0.ru_utime) - tv_ns(ru0.ru_stime));
		cnt[H_THREAD_VOL] = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
		cnt[H_THREAD_INVOL] = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	}
	cnt[H_NAPI_ID] = napi;
	cnt[H_STOP_SIGNAL] = (uint64_t)stop_signal;
	cnt[H_KEYING] = keying;
	cnt[H_CALLS_WAITS] += ring.enters;
	cnt[H_CALLS_RING_OPS] = ring.ops;
	cnt[H_CALLS_RECVMSG] = calls[CALL_RECVMSG];
	cnt[H_CALLS_SENDMSG] = calls[CALL_SENDMSG];
	cnt[H_CALLS_SETSOCKOPT] = calls[CALL_SETSOCKOPT];
	cnt[H_CALLS_SOCKET] = calls[CALL_SOCKET];
	if (handoff_write(c.out_fd, cnt, recs, c.capacity) < 0)
		die(1, "writing the handoff: %s", strerror(errno));
	if (failed)
		die(1, "%s", fail_msg);
	return 0;
}
