/* seccomp-exec SYSCALL ERRNO PROGRAM ARGS…: runs PROGRAM under a seccomp
 * filter that fails one system call (by number) with ERRNO, as a container
 * runtime's default profile fails io_uring_setup. The tests use it to see
 * the native engine refuse a backend the way a container would. */
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: seccomp-exec SYSCALL ERRNO PROGRAM ARGS...\n");
		return 2;
	}
	unsigned nr = (unsigned)atoi(argv[1]), err = (unsigned)atoi(argv[2]);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (err & SECCOMP_RET_DATA)),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof *f, .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0) {
		perror("seccomp-exec: seccomp");
		return 1;
	}
	execv(argv[3], argv + 3);
	perror("seccomp-exec: exec");
	return 1;
}
