/* The setup every native program shares (pin.h). */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pin.h"

void die(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (*die_fd < 0 || dprintf(*die_fd, "%s %s\n", code == 2 ? "refused" : "failed", msg) < 0)
		fprintf(stderr, "%s: %s\n", *die_prog, msg);
	exit(code);
}

uint64_t num(const char *name, const char *s, uint64_t max)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *s == '-' || *end || end == s || v > max)
		die(2, "--%s %s: want a number up to %" PRIu64, name, s, max);
	return v;
}

void pin_thread(int cpu, int fifo)
{
	if (cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof set, &set) < 0)
			die(2, "pin thread to CPU %d: %s (is it online and in this process's cpuset?)", cpu, strerror(errno));
	}
	if (fifo) {
		struct sched_param sp = {.sched_priority = fifo};
		if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0) {
			if (errno == EPERM)
				die(2, "set scheduling policy fifo:%d: needs CAP_SYS_NICE (run as root or grant it)", fifo);
			die(1, "set scheduling policy fifo:%d: %s", fifo, strerror(errno));
		}
	}
}
