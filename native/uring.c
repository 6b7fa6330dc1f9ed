/* A minimal io_uring over libc's syscall(): see uring.h. */
#include <errno.h>
#include <linux/io_uring.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "uring.h"

static int sys_enter(struct uring *u, unsigned submit, unsigned min, unsigned flags, void *arg, size_t argsz)
{
	u->enters++;
	return (int)syscall(__NR_io_uring_enter, u->fd, submit, min, flags, arg, argsz);
}

/* readword reads the first word of a file ("" when it cannot). */
static void readword(const char *path, const char *key, char *out, size_t len)
{
	out[0] = 0;
	if (len < 16)
		return;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof line, f)) {
		const char *v = line;
		if (key) {
			if (strncmp(line, key, strlen(key)) != 0)
				continue;
			v += strlen(key);
		}
		if (sscanf(v, " %15s", out) != 1)
			out[0] = 0;
		break;
	}
	fclose(f);
}

/* explain says why io_uring_setup failed with err, from what the host shows. */
static void explain(int err, int sqpoll, char *why, size_t len)
{
	char disabled[16], seccomp[16];
	readword("/proc/sys/kernel/io_uring_disabled", NULL, disabled, sizeof disabled);
	readword("/proc/self/status", "Seccomp:", seccomp, sizeof seccomp);
	struct io_uring_params p;
	memset(&p, 0, sizeof p);
	int plain = -1;
	if (sqpoll && err == EPERM && (plain = (int)syscall(__NR_io_uring_setup, 4, &p)) >= 0)
		close(plain);
	if (err == EPERM && strcmp(disabled, "2") == 0)
		snprintf(why, len, "io_uring is disabled on this host (kernel.io_uring_disabled = 2; 0 enables it)");
	else if (err == EPERM && strcmp(disabled, "1") == 0 && plain < 0)
		snprintf(why, len, "kernel.io_uring_disabled = 1 and this process is neither root nor in kernel.io_uring_group");
	else if (plain >= 0)
		snprintf(why, len, "IORING_SETUP_SQPOLL needs CAP_SYS_ADMIN on this kernel (io_uring_setup: EPERM; a plain ring works)");
	else if (strcmp(seccomp, "2") == 0)
		snprintf(why, len, "a seccomp filter refuses io_uring_setup (%s; Seccomp: 2 in /proc/self/status): a container runtime's default profile does; allow io_uring_setup, io_uring_enter and io_uring_register", strerror(err));
	else if (err == ENOSYS)
		snprintf(why, len, "this kernel has no io_uring (io_uring_setup: ENOSYS; built without CONFIG_IO_URING)");
	else
		snprintf(why, len, "io_uring_setup: %s", strerror(err));
}

int uring_open(struct uring *u, int sqpoll, char *why, size_t whylen)
{
	struct io_uring_params p;
	memset(u, 0, sizeof *u);
	memset(&p, 0, sizeof p);
	if (sqpoll) {
		p.flags = IORING_SETUP_SQPOLL;
		p.sq_thread_idle = 1000; /* ms: at 1 request/ms the SQ thread never sleeps in a round */
	}
	u->fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (u->fd < 0) {
		explain(errno, sqpoll, why, whylen);
		return -1;
	}
	u->sqpoll = sqpoll;
	u->features = p.features;
	if (!sqpoll && !(p.features & IORING_FEAT_EXT_ARG)) {
		snprintf(why, whylen, "this kernel's io_uring lacks IORING_FEAT_EXT_ARG (Linux 5.11): the loop could not wait with a timeout");
		goto fail;
	}
	if (sqpoll && !(p.features & IORING_FEAT_SQPOLL_NONFIXED)) {
		snprintf(why, whylen, "this kernel's SQPOLL lacks IORING_FEAT_SQPOLL_NONFIXED (Linux 5.11): it takes registered files only");
		goto fail;
	}
	size_t sqsz = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	size_t cqsz = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	int single = (p.features & IORING_FEAT_SINGLE_MMAP) != 0;
	if (single)
		sqsz = cqsz = sqsz > cqsz ? sqsz : cqsz;
	char *sq = mmap(NULL, sqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_SQ_RING);
	char *cq = single ? sq : mmap(NULL, cqsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, u->fd, IORING_OFF_CQ_RING);
	void *sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
			  u->fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || cq == MAP_FAILED || sqes == MAP_FAILED) {
		snprintf(why, whylen, "mmap of the io_uring rings: %s", strerror(errno));
		goto fail;
	}
	u->sq_head = (unsigned *)(sq + p.sq_off.head);
	u->sq_tail = (unsigned *)(sq + p.sq_off.tail);
	u->sq_mask = (unsigned *)(sq + p.sq_off.ring_mask);
	u->sq_flags = (unsigned *)(sq + p.sq_off.flags);
	u->sq_array = (unsigned *)(sq + p.sq_off.array);
	u->cq_head = (unsigned *)(cq + p.cq_off.head);
	u->cq_tail = (unsigned *)(cq + p.cq_off.tail);
	u->cq_mask = (unsigned *)(cq + p.cq_off.ring_mask);
	u->cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
	u->sqes = sqes;
	return 0;
fail:
	close(u->fd);
	u->fd = -1;
	return -1;
}

int uring_submit(struct uring *u, int fd, struct msghdr *msg, unsigned flags, int send, uint64_t tag)
{
	unsigned tail = *u->sq_tail;
	unsigned idx = tail & *u->sq_mask;
	struct io_uring_sqe *s = &u->sqes[idx];
	memset(s, 0, sizeof *s);
	s->opcode = send ? IORING_OP_SENDMSG : IORING_OP_RECVMSG;
	s->fd = fd;
	s->addr = (uint64_t)(uintptr_t)msg;
	s->len = 1;
	s->msg_flags = flags;
	s->user_data = tag;
	u->sq_array[idx] = idx;
	__atomic_store_n(u->sq_tail, tail + 1, __ATOMIC_RELEASE);
	u->ops++;
	if (!u->sqpoll) {
		u->pending++;
		return 0;
	}
	/* The SQ thread may have gone to sleep after sq_thread_idle. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(u->sq_flags, __ATOMIC_RELAXED) & IORING_SQ_NEED_WAKEUP)
		if (sys_enter(u, 0, 0, IORING_ENTER_SQ_WAKEUP, NULL, 0) < 0)
			return -1;
	return 0;
}

static int take(struct uring *u, uint64_t *tag, int32_t *res)
{
	unsigned head = *u->cq_head;
	if (head == __atomic_load_n(u->cq_tail, __ATOMIC_ACQUIRE))
		return 0;
	struct io_uring_cqe *c = &u->cqes[head & *u->cq_mask];
	*tag = c->user_data;
	*res = c->res;
	__atomic_store_n(u->cq_head, head + 1, __ATOMIC_RELEASE);
	return 1;
}

int uring_reap(struct uring *u, const struct timespec *timeout, uint64_t *tag, int32_t *res)
{
	if (take(u, tag, res))
		return 1;
	if (u->sqpoll && (timeout == NULL || (timeout->tv_sec == 0 && timeout->tv_nsec == 0)))
		return 0;
	struct __kernel_timespec ts = {0};
	struct io_uring_getevents_arg arg = {.sigmask_sz = _NSIG / 8};
	unsigned flags = 0, min = 0;
	if (timeout) {
		ts.tv_sec = timeout->tv_sec;
		ts.tv_nsec = timeout->tv_nsec;
		arg.ts = (uint64_t)(uintptr_t)&ts;
		flags = IORING_ENTER_GETEVENTS | IORING_ENTER_EXT_ARG;
		min = 1;
	}
	if (u->pending == 0 && min == 0)
		return 0;
	int n = sys_enter(u, u->pending, min, flags, min ? &arg : NULL, min ? sizeof arg : 0);
	if (n < 0 && errno != ETIME && errno != EINTR && errno != EAGAIN && errno != EBUSY)
		return -1;
	if (n > 0)
		u->pending -= (unsigned)n < u->pending ? (unsigned)n : u->pending;
	return take(u, tag, res);
}
