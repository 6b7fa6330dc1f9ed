/*
 * pin.c: the setup every native program shares (rig-respond-native,
 * rig-send-native, rig-noise-native): setup errors, the command line's
 * numbers, clock reads, the thread's CPU and policy. No sockets: the noise
 * probe links it without sock.c.
 */
#ifndef RIG_PIN_H
#define RIG_PIN_H

#include <stdint.h>
#include <sys/time.h>
#include <time.h>

/* die reports a setup error on the ready pipe (stderr without one) and
 * exits: code 2 refused, 1 failed. Each program defines where its pipe's
 * fd and its name live (its command line sets them). */
extern const int *const die_fd;
extern const char *const *const die_prog;
void die(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
uint64_t num(const char *name, const char *s, uint64_t max);
/* pin_thread pins the calling thread to cpu (none: -1) and sets SCHED_FIFO
 * at priority fifo (none: 0). */
void pin_thread(int cpu, int fifo);

static inline int64_t now_ns(clockid_t clk)
{
	struct timespec ts;
	clock_gettime(clk, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t tv_ns(struct timeval tv) { return (int64_t)tv.tv_sec * 1000000000 + tv.tv_usec * 1000; }

#endif
