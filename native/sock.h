/*
 * sock.c: the socket layer the two measuring loops share
 * (rig-respond-native, rig-send-native).
 */
#ifndef RIG_SOCK_H
#define RIG_SOCK_H

#include <netinet/in.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>

#include "pin.h"

/* sk is what the command line set for it; fd the loop's socket. */
struct sockcfg {
	const char *prog; /* for messages when there is no ready pipe */
	int ready_fd;
	const char *iface;
	int ifindex, cpu, fifo;
	uint32_t ts_flags, ts_optional;
	int hw_rx, hw_tx, hw_window, hw_fail;
	int tx_sched; /* --tx-sw sched: the qdisc's stamp is the software TX stamp */
	int64_t tx_wait_ns;
	const char *presence; /* --presence: the stack's "am I loaded" function, int f(void) */
	const char *fd_stat;  /* --fd-stat: its per-socket check, as onload_fd_stat */
};
extern struct sockcfg sk;
extern int fd;
/* The libc socket calls made, per kind. */
enum { CALL_RECVMSG, CALL_SENDMSG, CALL_SETSOCKOPT, CALL_SOCKET, NCALLS };
extern uint64_t calls[NCALLS];
/* sock_send, when set, sends instead of libc's sendmsg (the responder's
 * io_uring): 0 or an errno. */
extern int (*sock_send)(struct msghdr *m);

/* Timestamping as set up: what rig asked, what the kernel holds. */
enum keying { KEY_NONE, KEY_PER_SEND, KEY_COUNTER }; /* tstamp.Keying */
extern uint32_t ts_granted, ts_dropped;
extern int ts_old, ts_assumed, want_sw, want_hw, want_hw_rx, sw_kind;
extern enum keying keying;

void sockfail(const char *what);
void addr(const char *name, const char *s, struct sockaddr_in *sa, int *has);
int sopt(int level, int opt, const void *v, socklen_t len);
int sopt_int(int level, int opt, int v);
ssize_t recv_msg(struct msghdr *m, int flags);
void timestamping(void);
/* set_rcvbuf asks for want bytes of receive buffer: what it got. */
int set_rcvbuf(int want);
void place(void);
/* The hardware-stamp proof, as far as a loop needs it: hw_sent after each
 * send, hw_received with each RX stamp; hw_tx_seen is set by the loop when
 * a hardware TX stamp is filed, stop_proof when the loop must stop. */
extern int hw_tx_seen, stop_proof;
void hw_sent(int64_t now);
void hw_received(int64_t hw);

struct txst {
	uint32_t key, kind;
	int64_t sw, hw;
};
void rx_stamps(const uint8_t *b, size_t len, int64_t *sw, int64_t *hw);
int tx_stamp(const uint8_t *b, size_t len, struct txst *t);
/* send_keyed sends m with its TX stamps keyed key (tstamp.Conn.SendTo):
 * 0 or an errno. tx_key maps a stamp's key back (0: older than kept). */
int send_keyed(struct msghdr *m, uint32_t key);
int tx_key(const struct txst *t, uint32_t *key);
/* tx_file stores t in a record's TX slots (the kind the loop wants for
 * software, SND for hardware) and notes a hardware one for the proof. */
void tx_file(const struct txst *t, int64_t *sw, int64_t *hw);

/* stack_checks writes the ready line's fields of the stack's own checks
 * (--presence, --fd-stat) on the set-up socket: " presence=yes|no|absent"
 * and " accelerated=yes stack=NAME id=N|no|absent|error:N", each when asked. */
void stack_checks(char *out, size_t n);

#endif
