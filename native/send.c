/*
 * rig-send-native: rig send's measuring loop as a program of its own,
 * spawned by `rig send --engine native` (docs/probes.md#the-native-engine),
 * so that the native responder is measured by a sender of its own kind.
 *
 * It is sender/sender.go's loop: request k is due at start + k·interval
 * on CLOCK_MONOTONIC whatever happened before it; while it waits, the one
 * thread serves the socket (replies, and TX stamps from the error queue,
 * one read per stamp) by --poll block (ppoll while a reply or stamp is
 * awaited, else clock_nanosleep to the absolute deadline, then a spin of
 * --spin-ns) or busy (recvmsg without blocking, then a spin); in the
 * closed loop (block, --spin-ns ≥ --interval-ns) the reply is awaited in
 * a blocking recvmsg, not ppoll. After the
 * last send it collects replies until all came or --reply-timeout-ns
 * passed, and TX stamps for --tx-wait-ns.
 *
 * rig decides everything before the loop (the socket's timestamping, the
 * CPU, the addresses) and passes it here as numbers (sender/native.go
 * builds the command line); the socket is opened through libc (sock.c).
 * The records — one per sequence, in samples.RoleSender's columns — are
 * one mapping made before the loop; rig turns the handoff into the sample
 * file (docs/formats.md#the-native-senders-handoff). Its ready line and
 * refusals work as rig-respond-native's.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <linux/errqueue.h> /* after time.h: it needs struct timespec */

#include "rig.h"
#include "sock.h"

#ifndef RIG_COMMIT
#define RIG_COMMIT "unknown"
#endif

/* The sender's columns (samples.RoleSender's order). */
enum { S_DUE, S_TX_USER, S_TX_SW, S_TX_HW, S_RX_HW, S_RX_SW, S_RX_USER, S_NSTAMPS };
enum { FLAG_REORDERED = 2 }; /* samples.FlagReordered */

struct srec {
	int64_t t[S_NSTAMPS];
	uint64_t flags;
};

/* sender.go's constants: a busy wait stops polling busyGuard before a
 * due time; a blocking one sleeps until at most replyGuard before it
 * while a reply is awaited; eager TX reads stop after txEagerMisses. */
enum { BUSY_GUARD_NS = 3000, REPLY_GUARD_NS = 50000, TX_EAGER_MISSES = 3 };

static struct {
	struct sockaddr_in dst, reply_group;
	int has_group, has_to, has_reply_group;
	int port;
	uint32_t arm, round;
	uint64_t run_id, count;
	int64_t interval_ns, spin_ns, reply_timeout_ns;
	int size, busy, closed, rcvbuf, out_fd, live_fd;
} c = {.port = -1, .out_fd = -1, .live_fd = -1};

static volatile sig_atomic_t stop_signal;
static int failed; /* FAIL_*: a call failed, the loop stops and hands back what it has */
static struct srec *recs;
static uint64_t cnt[SH_NFIELDS];
static int64_t last = -1, maxseq = -1; /* the last request sent, the highest replied */
static uint64_t received;
static int tx_misses;
static int64_t start_mono;
/* The live page (--live-fd): sent and received as the loop counts them,
 * stored relaxed for rig's progress lines; without one, a private pair. */
enum { LIVE_SENT, LIVE_RECEIVED, LIVE_N };
static uint64_t live_none[LIVE_N], *live = live_none;

static uint8_t txbuf[2048], rxbuf[2048];
static union { uint8_t b[256]; struct cmsghdr align; } rx_oob, eq_oob;
static uint8_t eq_buf[64];
static struct iovec tx_iov = {txbuf, 0}, rx_iov = {rxbuf, sizeof rxbuf}, eq_iov = {eq_buf, sizeof eq_buf};
static struct msghdr tx_msg = {.msg_name = &c.dst, .msg_namelen = sizeof c.dst, .msg_iov = &tx_iov, .msg_iovlen = 1};
static struct msghdr rx_msg = {.msg_iov = &rx_iov, .msg_iovlen = 1, .msg_control = rx_oob.b};
static struct msghdr eq_msg = {.msg_iov = &eq_iov, .msg_iovlen = 1, .msg_control = eq_oob.b};

static void args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"iface", 1, 0, 'i'}, {"ifindex", 1, 0, 'x'}, {"group", 1, 0, 'g'}, {"to", 1, 0, 'u'}, {"port", 1, 0, 'P'},
		{"reply-group", 1, 0, 'r'}, {"run-id", 1, 0, 'R'}, {"arm-index", 1, 0, 'a'}, {"round", 1, 0, 'o'},
		{"count", 1, 0, 'n'}, {"interval-ns", 1, 0, 'v'}, {"spin-ns", 1, 0, 'z'}, {"size", 1, 0, 'Z'},
		{"cpu", 1, 0, 'c'}, {"fifo", 1, 0, 'f'}, {"poll", 1, 0, 'p'}, {"ts-flags", 1, 0, 't'},
		{"ts-optional", 1, 0, 'T'}, {"hw-tx", 1, 0, 'h'}, {"hw-rx", 1, 0, 'H'}, {"hw-window", 1, 0, 'w'},
		{"hw-fail", 1, 0, 'F'}, {"tx-sw", 1, 0, 'S'}, {"reply-timeout-ns", 1, 0, 'e'}, {"tx-wait-ns", 1, 0, 'W'},
		{"rcvbuf", 1, 0, 's'}, {"ready-fd", 1, 0, 'y'}, {"out-fd", 1, 0, 'O'},
		{"live-fd", 1, 0, 'L'}, {"presence", 1, 0, 'Q'}, {"fd-stat", 1, 0, 'd'}, {"version", 0, 0, 'V'}, {0, 0, 0, 0},
	};
	int o;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		const char *v = optarg;
		switch (o) {
		case 'i': sk.iface = v; break;
		case 'x': sk.ifindex = (int)num("ifindex", v, INT_MAX); break;
		case 'g': addr("group", v, &c.dst, &c.has_group); break;
		case 'u': addr("to", v, &c.dst, &c.has_to); break;
		case 'P': c.port = (int)num("port", v, 65535); break;
		case 'r': addr("reply-group", v, &c.reply_group, &c.has_reply_group); break;
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
		case 'n': c.count = num("count", v, 1ull << 31); break;
		case 'v': c.interval_ns = (int64_t)num("interval-ns", v, INT64_MAX); break;
		case 'z': c.spin_ns = (int64_t)num("spin-ns", v, INT64_MAX); break;
		case 'Z': c.size = (int)num("size", v, sizeof txbuf); break;
		case 'c': sk.cpu = strcmp(v, "-1") == 0 ? -1 : (int)num("cpu", v, CPU_SETSIZE - 1); break;
		case 'f': sk.fifo = (int)num("fifo", v, 99); break;
		case 'p':
			if (strcmp(v, "block") && strcmp(v, "busy"))
				die(2, "--poll %s: the native sender waits by block or busy", v);
			c.busy = !strcmp(v, "busy");
			break;
		case 't': sk.ts_flags = (uint32_t)num("ts-flags", v, UINT32_MAX); break;
		case 'T': sk.ts_optional = (uint32_t)num("ts-optional", v, UINT32_MAX); break;
		case 'h': sk.hw_tx = (int)num("hw-tx", v, 1); break;
		case 'H': sk.hw_rx = (int)num("hw-rx", v, 1); break;
		case 'w': sk.hw_window = (int)num("hw-window", v, 1 << 20); break;
		case 'F': sk.hw_fail = (int)num("hw-fail", v, 1); break;
		case 'S':
			if (strcmp(v, "sched") && strcmp(v, "snd"))
				die(2, "--tx-sw %s: want snd or sched", v);
			sk.tx_sched = !strcmp(v, "sched");
			break;
		case 'e': c.reply_timeout_ns = (int64_t)num("reply-timeout-ns", v, INT64_MAX); break;
		case 'W': sk.tx_wait_ns = (int64_t)num("tx-wait-ns", v, INT64_MAX); break;
		case 's': c.rcvbuf = (int)num("rcvbuf", v, INT_MAX); break;
		case 'y': sk.ready_fd = (int)num("ready-fd", v, INT_MAX); break;
		case 'O': c.out_fd = (int)num("out-fd", v, INT_MAX); break;
		case 'L': c.live_fd = (int)num("live-fd", v, INT_MAX); break;
		case 'Q': sk.presence = v; break;
		case 'd': sk.fd_stat = v; break;
		case 'V':
			printf("rig-send-native commit %s, handoff format %d, wire format %d\n", RIG_COMMIT, SEND_HANDOFF_VERSION, WIRE_VERSION);
			exit(0);
		default: die(2, "unknown or incomplete argument %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die(2, "unexpected argument %s", argv[optind]);
	if (!sk.iface || !sk.ifindex || c.has_group == c.has_to || c.port < 0 || !c.run_id || !c.count || !c.interval_ns ||
	    c.size < WIRE_HEADER_LEN || !c.reply_timeout_ns || c.out_fd < 0)
		die(2, "needs --iface, --ifindex, --group or --to, --port, --run-id, --count, --interval-ns, --size (44 or more), --reply-timeout-ns and --out-fd (rig send --engine native builds this command line)");
	/* The closed loop: block, spinning the whole interval, so nothing but
	 * the reply is waited for between two sends (wait_serving). */
	c.closed = !c.busy && c.spin_ns >= c.interval_ns;
}

/* rcvtimeo sets SO_RCVTIMEO to ns: what the kernel made of it. */
static int64_t rcvtimeo(int64_t ns)
{
	struct timeval tv = {ns / 1000000000, ns % 1000000000 / 1000};
	socklen_t len = sizeof tv;
	if (sopt(SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) < 0 || getsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) < 0)
		sockfail("SO_RCVTIMEO");
	return tv.tv_sec * 1000000000 + tv.tv_usec * 1000;
}

static int setup_socket(void)
{
	calls[CALL_SOCKET]++;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0)
		sockfail("socket(AF_INET, SOCK_DGRAM)");
	/* tstamp.ListenUDP: SO_REUSEADDR only to share a reply group's port. */
	if (c.has_reply_group && sopt_int(SOL_SOCKET, SO_REUSEADDR, 1) < 0)
		sockfail("SO_REUSEADDR");
	if (sopt(SOL_SOCKET, SO_BINDTODEVICE, sk.iface, (socklen_t)strlen(sk.iface) + 1) < 0)
		sockfail("SO_BINDTODEVICE");
	struct sockaddr_in la = {.sin_family = AF_INET, .sin_port = htons((uint16_t)c.port)};
	if (bind(fd, (struct sockaddr *)&la, sizeof la) < 0)
		sockfail("bind");
	timestamping();
	struct ip_mreqn mr = {.imr_ifindex = sk.ifindex};
	if (c.has_group) {
		if (sopt(IPPROTO_IP, IP_MULTICAST_IF, &mr, sizeof mr) < 0)
			sockfail("IP_MULTICAST_IF");
		if (sopt_int(IPPROTO_IP, IP_MULTICAST_LOOP, 0) < 0)
			sockfail("IP_MULTICAST_LOOP");
	}
	int rcvbuf = set_rcvbuf(c.rcvbuf);
	/* The closed loop's reply wait: a blocking recvmsg bounded by
	 * SO_RCVTIMEO, set once. The kernel counts it in ticks (4 ms at
	 * HZ=250) from the next one, so one tick could end a wait at once:
	 * half an interval and at least two ticks. A reply slower than that
	 * makes the next send late by up to the bound, which its due time
	 * shows — the price of one system call less than ppoll's. */
	if (c.closed) {
		int64_t tick = rcvtimeo(1000);
		rcvtimeo(c.interval_ns / 2 > 2 * tick ? c.interval_ns / 2 : 2 * tick);
	}
	if (c.has_reply_group) {
		mr.imr_multiaddr = c.reply_group.sin_addr;
		if (sopt(IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof mr) < 0)
			sockfail("IP_ADD_MEMBERSHIP");
	}
	return rcvbuf;
}

/* ---- what the loop waits for ---- */

/* tx_awaits: request k was sent and lacks a TX stamp it wants
 * (samples.SenderTx.Awaits). */
static int tx_awaits(const struct srec *r)
{
	return r->t[S_TX_USER] && ((want_sw && !r->t[S_TX_SW]) || (want_hw && !r->t[S_TX_HW]));
}

static int tx_awaited(void) { return last >= 0 && tx_awaits(&recs[last]); }
static int reply_awaited(void) { return last >= 0 && recs[last].t[S_TX_USER] && !recs[last].t[S_RX_USER]; }

/* file_tx files one TX stamp under its sequence (Sender.fileTx); one read
 * long after its request's due time counts as late. */
static void file_tx(const struct txst *t)
{
	uint32_t key;
	if (!tx_key(t, &key) || key >= c.count)
		return;
	struct srec *r = &recs[key];
	tx_file(t, &r->t[S_TX_SW], &r->t[S_TX_HW]);
	if (now_ns(CLOCK_REALTIME) - r->t[S_DUE] > sk.tx_wait_ns)
		cnt[SH_TX_LATE]++;
}

/* read_tx reads the error queue one stamp per read until the last
 * request's stamp is filed (until_filed) or the queue is empty: 1 when it
 * read a stamp (tstamp.Conn.ReadTx). */
static int read_tx(int until_filed)
{
	int got = 0;
	for (;;) {
		if (until_filed && !tx_awaited())
			return got;
		eq_msg.msg_controllen = sizeof eq_oob.b;
		eq_msg.msg_flags = 0;
		cnt[SH_CALLS_TX_READS]++;
		if (recv_msg(&eq_msg, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return got;
		struct txst t = {0};
		if (tx_stamp(eq_oob.b, eq_msg.msg_controllen, &t)) {
			file_tx(&t);
			got = 1;
		}
	}
}

/* reply files one received datagram (Sender.onReply): 1 for a reply to a
 * request of this round, duplicates included. */
static int reply(size_t n, int64_t user)
{
	struct wire_hdr h;
	enum wire_err e = wire_decode(rxbuf, n, c.run_id, &h);
	if (e != WIRE_OK) {
		cnt[wire_foreign(e) ? SH_FOREIGN : SH_MALFORMED]++;
		return 0;
	}
	/* One responder (id 0): rig refuses --responders above 1. */
	if (h.type != WIRE_REPLY || h.seq >= c.count || h.responder != 0 || h.arm != c.arm || h.round != c.round ||
	    !recs[h.seq].t[S_TX_USER]) {
		cnt[SH_FOREIGN]++; /* a request, another arm's or round's, or a reply to nothing sent */
		return 0;
	}
	struct srec *r = &recs[h.seq];
	if (r->t[S_RX_USER]) {
		r->flags |= FLAG_DUPLICATE;
		cnt[SH_DUPLICATED]++;
		return 1;
	}
	if ((int64_t)h.seq < maxseq) {
		r->flags |= FLAG_REORDERED;
		cnt[SH_REORDERED]++;
	}
	if ((int64_t)h.seq > maxseq)
		maxseq = (int64_t)h.seq;
	rx_stamps(rx_oob.b, rx_msg.msg_controllen, &r->t[S_RX_SW], &r->t[S_RX_HW]);
	hw_received(r->t[S_RX_HW]);
	r->t[S_RX_USER] = user;
	received++;
	__atomic_store_n(&live[LIVE_RECEIVED], received, __ATOMIC_RELAXED);
	return 1;
}

/* fail notes the call that failed, and its errno, for the handoff. */
static void fail(int call)
{
	cnt[SH_FAIL_CALL] = (uint64_t)call;
	cnt[SH_FAIL_ERRNO] = (uint64_t)errno;
	failed = call;
}

/* read_one reads one datagram (flags 0: blocking, until SO_RCVTIMEO) and
 * files it: reply's verdict, or -1 when nothing was read. */
static int read_one(int flags)
{
	rx_msg.msg_controllen = sizeof rx_oob.b;
	rx_msg.msg_flags = 0;
	ssize_t n = recv_msg(&rx_msg, flags);
	if (n < 0) {
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			fail(FAIL_RECVMSG);
		return -1;
	}
	int64_t user = now_ns(CLOCK_REALTIME);
	if (rx_msg.msg_flags & MSG_TRUNC) {
		cnt[SH_MALFORMED]++;
		return 0;
	}
	return reply((size_t)n, user);
}

/* read_replies reads the replies queued: block stops at the first reply
 * it files (poll says what is left), busy reads until the queue is empty. */
static void read_replies(void)
{
	for (int r; (r = read_one(MSG_DONTWAIT)) >= 0;)
		if (r && !c.busy)
			return;
}

/* serve reads what the socket holds: busy without blocking, block after
 * waiting in ppoll until the monotonic deadline for either queue. */
static void serve(int64_t deadline)
{
	short ready = POLLIN;
	if (c.busy) {
		if (tx_awaited())
			ready |= POLLERR;
	} else {
		int64_t left = deadline - now_ns(CLOCK_MONOTONIC);
		struct timespec ts = {left > 0 ? left / 1000000000 : 0, left > 0 ? left % 1000000000 : 0};
		struct pollfd p = {.fd = fd, .events = POLLIN};
		cnt[SH_CALLS_WAITS]++;
		int r = ppoll(&p, 1, &ts, NULL);
		if (r < 0 && errno != EINTR)
			fail(FAIL_PPOLL);
		ready = r > 0 ? p.revents : 0;
	}
	if (ready & POLLIN)
		read_replies();
	if (ready & POLLERR)
		read_tx(0);
}

/* wait_serving waits until due (CLOCK_MONOTONIC), serving the socket
 * meanwhile (Sender.waitServing): block sleeps until due − spin (due −
 * min(spin, replyGuard) while a reply is awaited) in ppoll, or in
 * clock_nanosleep when nothing is awaited; busy polls until due −
 * busyGuard; both then spin on the clock. */
static void wait_serving(int64_t due)
{
	int timed_out = 0;
	while (!stop_signal && !failed) {
		int64_t left = due - now_ns(CLOCK_MONOTONIC);
		if (c.busy) {
			if (left <= BUSY_GUARD_NS)
				break;
			if (reply_awaited() || tx_awaited())
				serve(0);
			continue;
		}
		int awaiting = reply_awaited();
		/* Closed loop: the reply in a blocking recvmsg (2 system calls per
		 * round trip, as sockperf's), then its TX stamp if the eager read
		 * missed it; what is still awaited after falls to ppoll. */
		if (c.closed && awaiting && !timed_out && left > REPLY_GUARD_NS) {
			int r = read_one(0);
			timed_out = r < 0;
			if (r > 0 && tx_awaited())
				read_tx(1);
			continue;
		}
		int64_t spin = (awaiting || (c.closed && tx_awaited())) && c.spin_ns > REPLY_GUARD_NS ? REPLY_GUARD_NS : c.spin_ns;
		if (left <= spin)
			break;
		int64_t wake = due - spin;
		if (awaiting || tx_awaited()) {
			serve(wake);
			continue;
		}
		struct timespec ts = {wake / 1000000000, wake % 1000000000};
		cnt[SH_CALLS_WAITS]++;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
	}
	while (!stop_signal && !failed && now_ns(CLOCK_MONOTONIC) < due) {
	}
}

/* send_now sends request k (Sender.sendNow): one reading of each clock
 * gives tx_user and due, due on CLOCK_REALTIME as tx_user less how late
 * the send is on the monotonic clock (Schedule.DueNS). */
static void send_now(uint64_t k)
{
	struct srec *r = &recs[k];
	int64_t real = now_ns(CLOCK_REALTIME), mono = now_ns(CLOCK_MONOTONIC);
	r->t[S_DUE] = real - (mono - (start_mono + (int64_t)k * c.interval_ns));
	struct wire_hdr h = {.run_id = c.run_id, .arm = c.arm, .round = c.round, .seq = k, .due = r->t[S_DUE]};
	wire_encode_request(txbuf, (size_t)c.size, &h);
	tx_iov.iov_len = (size_t)c.size;
	if (send_keyed(&tx_msg, (uint32_t)k) != 0) {
		cnt[SH_SEND_ERRORS]++;
		return;
	}
	r->t[S_TX_USER] = real;
	cnt[SH_SENT]++;
	__atomic_store_n(&live[LIVE_SENT], cnt[SH_SENT], __ATOMIC_RELAXED);
	last = (int64_t)k;
	hw_sent(real);
	if (tx_misses < TX_EAGER_MISSES && (want_sw || want_hw)) {
		if (read_tx(1))
			tx_misses = 0;
		else
			tx_misses++; /* this send's stamp comes later: read it while waiting */
	}
}

/* done: every reply came or the reply timeout passed since the last send,
 * and every TX stamp came or the TX wait passed (Sender.receiveDone). */
static int done(void)
{
	int64_t lt = last >= 0 ? recs[last].t[S_TX_USER] : 0, now = now_ns(CLOCK_REALTIME);
	int replies = received >= cnt[SH_SENT] || now - lt > c.reply_timeout_ns;
	int txs = now - lt > sk.tx_wait_ns;
	for (uint64_t k = 0; !txs && k < c.count && k <= (uint64_t)last; k++)
		if (tx_awaits(&recs[k]))
			return 0;
	return replies;
}

static void loop(void)
{
	for (uint64_t k = 0; k < c.count && !stop_signal && !stop_proof && !failed; k++) {
		wait_serving(start_mono + (int64_t)k * c.interval_ns);
		if (stop_signal || failed)
			break;
		send_now(k);
	}
	/* Collect what is in flight (the closed loop's last reply as the
	 * others); look at completion once a millisecond, first before any
	 * wait. */
	if (c.closed && !stop_signal && !failed && reply_awaited() && read_one(0) > 0 && tx_awaited())
		read_tx(1);
	for (int64_t next = now_ns(CLOCK_MONOTONIC); !failed;) {
		int64_t now = now_ns(CLOCK_MONOTONIC);
		if (now >= next) {
			read_tx(0);
			if (done())
				return;
			next = now + 1000000;
		}
		serve(next);
	}
}

static void on_signal(int sig) { stop_signal = sig; }

static int write_handoff(void)
{
	if (handoff_begin(c.out_fd, "RIGNSND\n", SEND_HANDOFF_VERSION, SH_NFIELDS, cnt) < 0)
		return -1;
	for (uint64_t k = 0; k < c.count; k++) {
		if (handoff_put(c.out_fd, recs[k].flags) < 0)
			return -1;
		for (int i = 0; i < S_NSTAMPS; i++)
			if (handoff_put(c.out_fd, (uint64_t)recs[k].t[i]) < 0)
				return -1;
	}
	return handoff_end(c.out_fd);
}

int main(int argc, char **argv)
{
	sk.prog = "rig-send-native";
	args(argc, argv);
	struct sigaction sa = {.sa_handler = on_signal}; /* no SA_RESTART: a signal ends a wait */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int rcvbuf = setup_socket();
	recs = mmap(NULL, c.count * sizeof *recs, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (recs == MAP_FAILED)
		die(1, "%" PRIu64 " records: %s", c.count, strerror(errno));
	if (c.live_fd >= 0) {
		live = mmap(NULL, sizeof live_none, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, c.live_fd, 0);
		if (live == MAP_FAILED)
			die(1, "the live page (--live-fd %d): %s", c.live_fd, strerror(errno));
	}
	place();
	/* A 1 ns timer slack: a sleep until due − spin ends then, not up to 50 µs later. */
	if (prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) < 0)
		die(1, "PR_SET_TIMERSLACK: %s", strerror(errno));
	int mlock_err = mlockall(MCL_CURRENT | MCL_FUTURE) < 0 ? errno : 0;
	char stack[160];
	stack_checks(stack, sizeof stack);
	if (dprintf(sk.ready_fd, "ready tid=%d ts_flags=%#x ts_old=%d ts_dropped=%#x ts_assumed=%d rcvbuf=%d mlockall=%d%s\n",
		    (int)gettid(), ts_granted, ts_old, ts_dropped, ts_assumed, rcvbuf, mlock_err, stack) < 0)
		die(1, "ready pipe: %s", strerror(errno));

	struct rusage ru0, ru1;
	int ru_ok = getrusage(RUSAGE_THREAD, &ru0) == 0;
	int64_t mono0 = now_ns(CLOCK_MONOTONIC);
	cnt[SH_LOOP_START] = (uint64_t)now_ns(CLOCK_REALTIME);
	start_mono = mono0 + c.interval_ns; /* one interval from now, as Sender.Run */
	if (rig_native_phase)
		rig_native_phase(1);
	loop();
	if (rig_native_phase)
		rig_native_phase(2);
	cnt[SH_LOOP_END] = (uint64_t)now_ns(CLOCK_REALTIME);
	int64_t mono1 = now_ns(CLOCK_MONOTONIC);
	ru_ok = ru_ok && getrusage(RUSAGE_THREAD, &ru1) == 0;

	cnt[SH_COUNT] = c.count;
	cnt[SH_THREAD_OK] = (uint64_t)ru_ok;
	if (ru_ok) {
		cnt[SH_THREAD_WALL] = (uint64_t)(mono1 - mono0);
		cnt[SH_THREAD_CPU] = (uint64_t)(tv_ns(ru1.ru_utime) + tv_ns(ru1.ru_stime) - tv_ns(ru0.ru_utime) - tv_ns(ru0.ru_stime));
		cnt[SH_THREAD_VOL] = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
		cnt[SH_THREAD_INVOL] = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	}
	cnt[SH_STOP_SIGNAL] = (uint64_t)stop_signal;
	cnt[SH_KEYING] = keying;
	cnt[SH_CALLS_RECVMSG] = calls[CALL_RECVMSG];
	cnt[SH_CALLS_SENDMSG] = calls[CALL_SENDMSG];
	cnt[SH_CALLS_SETSOCKOPT] = calls[CALL_SETSOCKOPT];
	cnt[SH_CALLS_SOCKET] = calls[CALL_SOCKET];
	if (write_handoff() < 0)
		die(1, "writing the handoff: %s", strerror(errno));
	return failed ? 1 : 0; /* rig reads why from the handoff */
}
