/* rig-interfere: the interference the noise tests inject. Pinned to
 * --cpu under SCHED_FIFO --fifo, it wakes every --period-us (absolute
 * CLOCK_MONOTONIC deadlines) and spins --spin-us, taking the CPU from
 * whatever runs there under SCHED_OTHER. It prints "ready" after its first
 * burst and, on SIGTERM or SIGINT, one line per burst, "START END" on
 * CLOCK_MONOTONIC in ns: the bursts the test counts, never its sleeps. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { MAX_BURSTS = 1 << 20 };
static int64_t bursts[MAX_BURSTS][2];
static volatile sig_atomic_t stop;

static void on_signal(int sig) { stop = sig; }

static int64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int cpu = -1, fifo = 0;
	int64_t period = 10000, spin = 200;
	for (int i = 1; i + 1 < argc; i += 2) {
		long v = strtol(argv[i + 1], NULL, 10);
		if (!strcmp(argv[i], "--cpu"))
			cpu = (int)v;
		else if (!strcmp(argv[i], "--fifo"))
			fifo = (int)v;
		else if (!strcmp(argv[i], "--period-us"))
			period = v;
		else if (!strcmp(argv[i], "--spin-us"))
			spin = v;
	}
	if (cpu < 0 || fifo < 1 || period <= spin || spin <= 0) {
		fprintf(stderr, "usage: rig-interfere --cpu N --fifo P [--period-us 10000] [--spin-us 200]\n");
		return 2;
	}
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	struct sched_param sp = {.sched_priority = fifo};
	if (sched_setaffinity(0, sizeof set, &set) < 0 || sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
		fprintf(stderr, "rig-interfere: CPU %d, fifo:%d: %s\n", cpu, fifo, strerror(errno));
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	int64_t next = now();
	size_t n = 0;
	while (!stop && n < MAX_BURSTS) {
		struct timespec at = {next / 1000000000, next % 1000000000};
		int e = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
		if (e == EINTR)
			continue; /* a signal: stop is set */
		if (e) {
			fprintf(stderr, "rig-interfere: clock_nanosleep: %s\n", strerror(e));
			return 1;
		}
		int64_t t0 = now(), t;
		while ((t = now()) - t0 < spin * 1000)
			;
		bursts[n][0] = t0;
		bursts[n][1] = t;
		if (n++ == 0) {
			printf("ready\n");
			fflush(stdout);
		}
		next += period * 1000;
	}
	for (size_t i = 0; i < n; i++)
		printf("%lld %lld\n", (long long)bursts[i][0], (long long)bursts[i][1]);
	return 0;
}
