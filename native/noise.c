/*
 * rig-noise-native: the platform-noise probe's loop, spawned by `rig noise`.
 * Pinned to one CPU, it does nothing but read the CPU's
 * counter (the TSC on x86-64, CNTVCT_EL0 on arm64) and note every gap
 * between two reads longer than 1 µs: whatever took the CPU from it — an
 * interrupt, another thread, the hypervisor — shows as a gap.
 *
 * Before the loop it calibrates the counter against CLOCK_MONOTONIC_RAW
 * (the rate every tick count is converted with); around the loop it
 * anchors the counter on CLOCK_MONOTONIC and CLOCK_REALTIME, so that each
 * kept gap's start can be matched with telemetry; in the loop it measures
 * its own detection floor, the shortest and the typical time between two
 * reads. It keeps the --keep longest gaps, counts the gaps above 1, 5, 20
 * and 100 µs and bins them by length (log2 from 1 µs).
 *
 * Readiness and failures go to --ready-fd as the responder's do: "ready
 * tid=… mlockall=… counter=…" as the loop starts, "refused MESSAGE" (bad
 * input, a missing privilege; exit 2) or "failed MESSAGE" (exit 1). The
 * loop ends after --duration-ns or on SIGINT/SIGTERM; the handoff
 * (docs/formats.md#the-noise-handoff) goes to --out-fd. Nothing in the
 * loop allocates or makes a system call.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "pin.h"
#include "rig.h"

#ifndef RIG_COMMIT
#define RIG_COMMIT "unknown"
#endif

enum { CALIB_MS = 50, ANCHOR_TRIES = 16, MAX_KEEP = 1 << 16 };
static const uint64_t thresh_ns[NOISE_THRESHOLDS] = {1000, 5000, 20000, 100000};
enum { HIST_BASE_NS = 1000 }; /* bin k: base·2^k < gap ≤ base·2^(k+1); the last is open */
static const uint64_t max_duration_ns = 86400ull * 1000000000;

static struct {
	int cpu, fifo, ready_fd, out_fd;
	uint64_t duration_ns, keep;
} c = {.cpu = -1, .ready_fd = -1, .out_fd = -1, .keep = 64};

static volatile sig_atomic_t stop_signal;

struct gap {
	uint64_t at, len; /* counter ticks */
};
static struct gap *heap; /* the longest gaps, a min-heap on len */
static uint64_t nheap;
static uint64_t thr[NOISE_THRESHOLDS], edge[NOISE_HIST_BINS], cnt[NOISE_THRESHOLDS], hist[NOISE_HIST_BINS];
static uint64_t lost, longest;
static double ns_per_tick;
static uint64_t h[N_NFIELDS];

static const char *const prog = "rig-noise-native";
const int *const die_fd = &c.ready_fd;
const char *const *const die_prog = &prog;

/* ---- the counter ---- */

#if defined(__x86_64__)
#define COUNTER_KIND COUNTER_TSC
#define COUNTER_NAME "TSC"
#elif defined(__aarch64__)
#define COUNTER_KIND COUNTER_CNTVCT
#define COUNTER_NAME "CNTVCT_EL0"
#endif

static inline uint64_t counter(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;
	__asm__ __volatile__("lfence\n\trdtsc" : "=a"(lo), "=d"(hi)::"memory"); /* ordered, as the kernel's rdtsc_ordered */
	return (uint64_t)hi << 32 | lo;
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
#else
#error "rig-noise-native reads the TSC (x86-64) or CNTVCT_EL0 (arm64)"
#endif
}

/* nominal_hz is the counter's architectural rate: CNTFRQ_EL0 on arm64;
 * the TSC has none a program can read (0), it is calibrated only. */
static uint64_t nominal_hz(void)
{
#if defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(v));
	return v;
#else
	return 0;
#endif
}

struct pair {
	uint64_t c;
	int64_t t;
};

/* anchor pairs a counter value with a reading of clk: the middle of the
 * tightest of a few brackets of two counter reads around it. */
static struct pair anchor(clockid_t clk)
{
	struct pair p = {0, 0};
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < ANCHOR_TRIES; i++) {
		uint64_t c0 = counter();
		int64_t t = now_ns(clk);
		uint64_t c1 = counter();
		if (c1 - c0 < best) {
			best = c1 - c0;
			p.c = c0 + (c1 - c0) / 2;
			p.t = t;
		}
	}
	return p;
}

static uint64_t to_ticks(uint64_t ns) { return (uint64_t)((double)ns / ns_per_tick); }
static uint64_t to_ps(double ticks) { return (uint64_t)(ticks * ns_per_tick * 1000 + 0.5); }

/* to_ns_up rounds up: a gap longer than a threshold in ticks stays at
 * least the threshold in ns. */
static uint64_t to_ns_up(uint64_t ticks)
{
	double ns = (double)ticks * ns_per_tick;
	uint64_t n = (uint64_t)ns;
	return n + ((double)n < ns);
}

/* at maps counter value x to clock time between the anchors a and b. */
static int64_t at(uint64_t x, struct pair a, struct pair b)
{
	double f = (double)(int64_t)(x - a.c) * (double)(b.t - a.t) / (double)(b.c - a.c);
	return a.t + (int64_t)(f < 0 ? f - 0.5 : f + 0.5);
}

/* ---- the gaps ---- */

static void swap(uint64_t i, uint64_t j)
{
	struct gap t = heap[i];
	heap[i] = heap[j];
	heap[j] = t;
}

static void keep_gap(uint64_t start, uint64_t d)
{
	if (nheap < c.keep) {
		uint64_t i = nheap++;
		heap[i] = (struct gap){start, d};
		for (; i > 0 && heap[(i - 1) / 2].len > heap[i].len; i = (i - 1) / 2)
			swap(i, (i - 1) / 2);
		return;
	}
	if (d <= heap[0].len)
		return;
	heap[0] = (struct gap){start, d};
	for (uint64_t i = 0;;) {
		uint64_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < nheap && heap[l].len < heap[m].len)
			m = l;
		if (r < nheap && heap[r].len < heap[m].len)
			m = r;
		if (m == i)
			return;
		swap(i, m);
		i = m;
	}
}

/* gap notes one gap of d ticks that started at counter value start. */
static __attribute__((noinline, cold)) void gap(uint64_t start, uint64_t d)
{
	lost += d;
	for (int i = 0; i < NOISE_THRESHOLDS && d > thr[i]; i++)
		cnt[i]++;
	int k = 0;
	while (k + 1 < NOISE_HIST_BINS && d > edge[k + 1])
		k++;
	hist[k]++;
	if (d > longest)
		longest = d;
	keep_gap(start, d);
}

static int by_start(const void *a, const void *b)
{
	const struct gap *x = a, *y = b;
	return (x->at > y->at) - (x->at < y->at);
}

/* loop reads the counter until the duration has passed or a signal came,
 * and returns the number of intervals between reads. */
static uint64_t loop(uint64_t *first, uint64_t *last, uint64_t *shortest)
{
	const uint64_t dur = to_ticks(c.duration_ns), t0 = thr[0];
	uint64_t prev = counter(), start = prev, now, n = 0, min = UINT64_MAX;
	for (;;) {
		now = counter();
		uint64_t d = now - prev;
		n++;
		if (d < min)
			min = d;
		if (__builtin_expect(d > t0, 0))
			gap(prev, d);
		if (now - start >= dur || stop_signal)
			break;
		prev = now;
	}
	*first = start;
	*last = now;
	*shortest = min;
	return n;
}

/* ---- command line ---- */

static void args(int argc, char **argv)
{
	static const struct option opts[] = {
		{"cpu", 1, 0, 'c'}, {"fifo", 1, 0, 'f'}, {"duration-ns", 1, 0, 'd'}, {"keep", 1, 0, 'k'},
		{"ready-fd", 1, 0, 'y'}, {"out-fd", 1, 0, 'O'}, {"version", 0, 0, 'V'}, {0, 0, 0, 0},
	};
	int o, ix;
	opterr = 0;
	while ((o = getopt_long(argc, argv, "", opts, &ix)) != -1) {
		const char *v = optarg;
		switch (o) {
		case 'c': c.cpu = (int)num("cpu", v, CPU_SETSIZE - 1); break;
		case 'f': c.fifo = (int)num("fifo", v, 99); break;
		case 'd': c.duration_ns = num("duration-ns", v, max_duration_ns); break;
		case 'k': c.keep = num("keep", v, MAX_KEEP); break;
		case 'y': c.ready_fd = (int)num("ready-fd", v, INT_MAX); break;
		case 'O': c.out_fd = (int)num("out-fd", v, INT_MAX); break;
		case 'V':
			printf("rig-noise-native commit %s, noise handoff format %d\n", RIG_COMMIT, NOISE_HANDOFF_VERSION);
			exit(0);
		default: die(2, "unknown or incomplete argument %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die(2, "unexpected argument %s", argv[optind]);
	if (c.cpu < 0 || !c.duration_ns || !c.keep || c.out_fd < 0)
		die(2, "needs --cpu, --duration-ns, --keep (1..%d) and --out-fd (rig noise builds this command line)", MAX_KEEP);
}

static void on_signal(int sig) { stop_signal = sig; }

int main(int argc, char **argv)
{
	args(argc, argv);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (!(heap = calloc(c.keep, sizeof *heap)))
		die(1, "%" PRIu64 " gaps: %s", c.keep, strerror(errno));
	pin_thread(c.cpu, c.fifo);
	int mlock_err = mlockall(MCL_CURRENT | MCL_FUTURE) < 0 ? errno : 0;

	/* The rate, on the CPU the loop runs on. */
	struct pair r0 = anchor(CLOCK_MONOTONIC_RAW);
	struct timespec pause = {0, CALIB_MS * 1000000};
	while (nanosleep(&pause, &pause) < 0 && errno == EINTR && !stop_signal)
		;
	struct pair r1 = anchor(CLOCK_MONOTONIC_RAW);
	if (r1.c <= r0.c || r1.t <= r0.t)
		die(1, "the counter did not advance against CLOCK_MONOTONIC_RAW (%" PRIu64 " ticks in %" PRId64 " ns)", r1.c - r0.c, r1.t - r0.t);
	ns_per_tick = (double)(r1.t - r0.t) / (double)(r1.c - r0.c);
	for (int i = 0; i < NOISE_THRESHOLDS; i++)
		thr[i] = to_ticks(thresh_ns[i]);
	for (int k = 0; k < NOISE_HIST_BINS; k++)
		edge[k] = to_ticks((uint64_t)HIST_BASE_NS << k);

	struct rusage ru0, ru1;
	int ru_ok = getrusage(RUSAGE_THREAD, &ru0) == 0;
	const char *name = COUNTER_NAME;
	if (dprintf(c.ready_fd, "ready tid=%d mlockall=%d counter=%s\n", (int)gettid(), mlock_err, name) < 0)
		die(1, "ready pipe: %s", strerror(errno));
	struct pair m0 = anchor(CLOCK_MONOTONIC), w0 = anchor(CLOCK_REALTIME), a0 = anchor(CLOCK_MONOTONIC_RAW);
	uint64_t first, last, shortest;
	uint64_t n = loop(&first, &last, &shortest);
	struct pair a1 = anchor(CLOCK_MONOTONIC_RAW), m1 = anchor(CLOCK_MONOTONIC), w1 = anchor(CLOCK_REALTIME);
	ru_ok = ru_ok && getrusage(RUSAGE_THREAD, &ru1) == 0;

	h[N_CPU] = (uint64_t)c.cpu;
	h[N_FIFO] = (uint64_t)c.fifo;
	h[N_COUNTER] = COUNTER_KIND;
	h[N_NOMINAL_HZ] = nominal_hz();
	h[N_RATE_TICKS] = r1.c - r0.c;
	h[N_RATE_NS] = (uint64_t)(r1.t - r0.t);
	h[N_CHECK_TICKS] = a1.c - a0.c;
	h[N_CHECK_NS] = (uint64_t)(a1.t - a0.t);
	h[N_START_MONO] = (uint64_t)at(first, m0, m1);
	h[N_END_MONO] = (uint64_t)at(last, m0, m1);
	h[N_START_REAL] = (uint64_t)at(first, w0, w1);
	h[N_END_REAL] = (uint64_t)at(last, w0, w1);
	h[N_READS] = n;
	h[N_TICK_PS] = to_ps(1);
	h[N_MIN_READ_PS] = to_ps((double)shortest);
	if (n > cnt[0])
		h[N_TYPICAL_READ_PS] = to_ps((double)(last - first - lost) / (double)(n - cnt[0]));
	for (int i = 0; i < NOISE_THRESHOLDS; i++) {
		h[N_THRESH_0 + i] = thresh_ns[i];
		h[N_COUNT_0 + i] = cnt[i];
	}
	h[N_GAP_TOTAL_NS] = to_ns_up(lost);
	h[N_LONGEST_NS] = to_ns_up(longest);
	h[N_HIST_BASE_NS] = HIST_BASE_NS;
	h[N_HIST_BINS] = NOISE_HIST_BINS;
	h[N_KEEP] = c.keep;
	h[N_GAPS] = nheap;
	h[N_THREAD_OK] = (uint64_t)ru_ok;
	if (ru_ok) {
		h[N_THREAD_WALL] = (uint64_t)(at(last, m0, m1) - at(first, m0, m1));
		h[N_THREAD_CPU] = (uint64_t)(tv_ns(ru1.ru_utime) + tv_ns(ru1.ru_stime) - tv_ns(ru0.ru_utime) - tv_ns(ru0.ru_stime));
		h[N_THREAD_VOL] = (uint64_t)(ru1.ru_nvcsw - ru0.ru_nvcsw);
		h[N_THREAD_INVOL] = (uint64_t)(ru1.ru_nivcsw - ru0.ru_nivcsw);
	}
	h[N_STOP_SIGNAL] = (uint64_t)stop_signal;

	qsort(heap, nheap, sizeof *heap, by_start);
	int bad = handoff_begin(c.out_fd, "RIGNOIS\n", NOISE_HANDOFF_VERSION, N_NFIELDS, h) < 0;
	for (int k = 0; k < NOISE_HIST_BINS && !bad; k++)
		bad = handoff_put(c.out_fd, hist[k]) < 0;
	for (uint64_t i = 0; i < nheap && !bad; i++)
		bad = handoff_put(c.out_fd, (uint64_t)at(heap[i].at, m0, m1)) < 0 || handoff_put(c.out_fd, (uint64_t)at(heap[i].at, w0, w1)) < 0 ||
		      handoff_put(c.out_fd, to_ns_up(heap[i].len)) < 0;
	if (bad || handoff_end(c.out_fd) < 0)
		die(1, "writing the handoff: %s", strerror(errno));
	return 0;
}
