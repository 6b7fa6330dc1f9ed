/* librig-interpose.so counts the libc calls a program makes, per phase of
 * the native engine's loop (rig_native_phase: 0 setup, 1 loop, 2 after),
 * and forwards each to the next definition. The tests preload it to prove
 * that the loop allocates nothing and that every socket call goes through
 * libc, where a kernel-bypass stack takes them over; preloaded in front of
 * such a stack (LD_PRELOAD="librig-interpose.so libonload.so") it counts
 * what the stack is handed.
 *
 * As a custom stack (rig respond --stack custom) it answers the presence
 * check rig_interpose_present, as Onload answers onload_is_present, and the
 * per-socket check rig_interpose_fd_stat, as Onload answers onload_fd_stat:
 * 1 for a socket its socket() made, 0 for any other — and for every one
 * when RIG_INTERPOSE_KERNEL is set, as a stack that left its sockets to
 * the kernel (an interface it cannot accelerate, EF_DONT_ACCELERATE).
 *
 * RIG_INTERPOSE_OUT names the file written at exit: one line per phase and
 * call that happened, "PHASE CALL COUNT" (syscall() calls as "syscall-NR"). */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>

enum { SOCKET, SETSOCKOPT, GETSOCKOPT, BIND, RECVMSG, SENDMSG, RECV, SEND, RECVFROM, SENDTO, EPOLL_WAIT,
       MALLOC, CALLOC, REALLOC, FREE, MEMALIGN, MMAP, RECVMSG_DATA, NCALLS };
static const char *const names[NCALLS] = {"socket", "setsockopt", "getsockopt", "bind", "recvmsg", "sendmsg", "recv",
	"send", "recvfrom", "sendto", "epoll_wait", "malloc", "calloc", "realloc", "free", "memalign", "mmap", "recvmsg-data"};
enum { NSYS = 512 };
static unsigned long calls[3][NCALLS], sys[3][NSYS];
static int phase;

static void count(int c) { __atomic_fetch_add(&calls[phase][c], 1, __ATOMIC_RELAXED); }

int rig_interpose_present(void) { return 1; }

/* The sockets its socket() made: a bit per fd below NFD. */
enum { NFD = 4096 };
static unsigned char taken[NFD / 8];

static void take(int fd, int on)
{
	if (fd < 0 || fd >= NFD)
		return;
	unsigned char bit = (unsigned char)(1u << fd % 8);
	if (on)
		__atomic_fetch_or(&taken[fd / 8], bit, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&taken[fd / 8], (unsigned char)~bit, __ATOMIC_RELAXED);
}

struct onload_stat { int32_t stack_id; char *stack_name; int32_t endpoint_id; int32_t endpoint_state; };

int rig_interpose_fd_stat(int fd, struct onload_stat *st)
{
	if (fd < 0 || fd >= NFD || !(taken[fd / 8] & 1 << fd % 8))
		return 0;
	st->stack_id = 7;
	st->stack_name = __builtin_strdup("interpose");
	return 1;
}

void rig_native_phase(int p)
{
	if (p >= 0 && p < 3)
		phase = p;
}

static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);
	if (!f)
		abort();
	return f;
}

#define FORWARD(ret, name, C, params, args)                        \
	ret name params                                            \
	{                                                          \
		static ret(*real) params;                          \
		if (!real)                                         \
			*(void **)&real = next(#name);             \
		count(C);                                          \
		return real args;                                  \
	}

int socket(int d, int t, int p)
{
	static int (*real)(int, int, int);
	if (!real)
		*(void **)&real = next("socket");
	count(SOCKET);
	int fd = real(d, t, p);
	take(fd, !getenv("RIG_INTERPOSE_KERNEL"));
	return fd;
}

int close(int fd)
{
	static int (*real)(int);
	if (!real)
		*(void **)&real = next("close");
	take(fd, 0);
	return real(fd);
}
FORWARD(int, setsockopt, SETSOCKOPT, (int s, int l, int o, const void *v, socklen_t n), (s, l, o, v, n))
FORWARD(int, getsockopt, GETSOCKOPT, (int s, int l, int o, void *v, socklen_t *n), (s, l, o, v, n))
FORWARD(int, bind, BIND, (int s, const struct sockaddr *a, socklen_t n), (s, a, n))
/* recvmsg also counts the reads that are not of the error queue: the
 * requests' receives. */
ssize_t recvmsg(int s, struct msghdr *m, int f)
{
	static ssize_t (*real)(int, struct msghdr *, int);
	if (!real)
		*(void **)&real = next("recvmsg");
	count(RECVMSG);
	if (!(f & MSG_ERRQUEUE))
		count(RECVMSG_DATA);
	return real(s, m, f);
}
FORWARD(ssize_t, sendmsg, SENDMSG, (int s, const struct msghdr *m, int f), (s, m, f))
FORWARD(ssize_t, recv, RECV, (int s, void *b, size_t n, int f), (s, b, n, f))
FORWARD(ssize_t, send, SEND, (int s, const void *b, size_t n, int f), (s, b, n, f))
FORWARD(ssize_t, recvfrom, RECVFROM, (int s, void *b, size_t n, int f, struct sockaddr *a, socklen_t *l), (s, b, n, f, a, l))
FORWARD(ssize_t, sendto, SENDTO, (int s, const void *b, size_t n, int f, const struct sockaddr *a, socklen_t l), (s, b, n, f, a, l))
FORWARD(int, epoll_wait, EPOLL_WAIT, (int e, struct epoll_event *ev, int n, int t), (e, ev, n, t))
FORWARD(void *, mmap, MMAP, (void *a, size_t n, int p, int f, int fd, off_t o), (a, n, p, f, fd, o))

/* The allocator through glibc's own entry points: dlsym allocates. */
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) { count(MALLOC); return __libc_malloc(n); }
void *calloc(size_t k, size_t n) { count(CALLOC); return __libc_calloc(k, n); }
void *realloc(void *p, size_t n) { count(REALLOC); return __libc_realloc(p, n); }
void free(void *p) { if (p) count(FREE); __libc_free(p); }
void *aligned_alloc(size_t a, size_t n) { count(MEMALIGN); return __libc_memalign(a, n); }
void *memalign(size_t a, size_t n) { count(MEMALIGN); return __libc_memalign(a, n); }
int posix_memalign(void **p, size_t a, size_t n)
{
	count(MEMALIGN);
	*p = __libc_memalign(a, n);
	return *p ? 0 : 12; /* ENOMEM */
}

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	if (!real)
		*(void **)&real = next("syscall");
	va_list ap;
	va_start(ap, nr);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr >= 0 && nr < NSYS)
		__atomic_fetch_add(&sys[phase][nr], 1, __ATOMIC_RELAXED);
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

__attribute__((destructor)) static void report(void)
{
	const char *path = getenv("RIG_INTERPOSE_OUT");
	if (!path)
		return;
	unsigned long snap[3][NCALLS], snaps[3][NSYS];
	__builtin_memcpy(snap, calls, sizeof snap); /* before fopen's own calls */
	__builtin_memcpy(snaps, sys, sizeof snaps);
	FILE *f = fopen(path, "we");
	if (!f)
		return;
	static const char *const phases[3] = {"setup", "loop", "after"};
	for (int p = 0; p < 3; p++) {
		for (int c = 0; c < NCALLS; c++)
			if (snap[p][c])
				fprintf(f, "%s %s %lu\n", phases[p], names[c], snap[p][c]);
		for (int n = 0; n < NSYS; n++)
			if (snaps[p][n])
				fprintf(f, "%s syscall-%d %lu\n", phases[p], n, snaps[p][n]);
	}
	fclose(f);
}
