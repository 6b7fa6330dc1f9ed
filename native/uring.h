/* A minimal io_uring: one ring, one operation of each kind in flight, over
 * libc's syscall() (glibc has no io_uring wrappers; liburing would be one
 * more library to cross-build for arm64 for three system calls). */
#ifndef RIG_URING_H
#define RIG_URING_H

#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

struct uring {
	int fd, sqpoll;
	unsigned *sq_head, *sq_tail, *sq_mask, *sq_flags, *sq_array;
	unsigned *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	unsigned features;
	unsigned pending; /* queued, not yet handed to the kernel (no SQ thread) */
	uint64_t enters, ops; /* io_uring_enter calls, operations submitted */
};

/* uring_open sets a ring up (sqpoll: IORING_SETUP_SQPOLL). On failure it
 * writes why, found by probing, into why and returns -1. */
int uring_open(struct uring *u, int sqpoll, char *why, size_t whylen);
/* uring_submit queues one recvmsg (send 0) or sendmsg (send 1) tagged tag
 * and hands it to the kernel (sqpoll: the SQ thread picks it up). */
int uring_submit(struct uring *u, int fd, struct msghdr *msg, unsigned flags, int send, uint64_t tag);
/* uring_reap takes one completion: 1 and its tag and result, 0 when none
 * came (waiting up to timeout; sqpoll and timeout 0: no system call), -1
 * on an error of io_uring_enter other than a timeout or a signal. */
int uring_reap(struct uring *u, const struct timespec *timeout, uint64_t *tag, int32_t *res);

#endif
