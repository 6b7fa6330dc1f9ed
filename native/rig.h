/*
 * rig's native engine: what its sources share. The responder's and the
 * sender's measuring loops (respond.c, send.c; their socket layer is
 * sock.c) run as dynamically linked programs of their own, so that a
 * kernel-bypass stack interposing libc's socket calls (LD_PRELOAD) can
 * accelerate it, and so that no language runtime interrupts it. rig (Go)
 * decides everything before the loop, spawns it, and turns what it hands
 * back (handoff.c; docs/formats.md) into a sample file.
 */
#ifndef RIG_NATIVE_H
#define RIG_NATIVE_H

#include <stddef.h>
#include <stdint.h>

_Static_assert(sizeof(long) == 8, "64-bit Linux only: scm_timestamping is three {int64, int64}");

/* Wire format 2 (internal/wire, docs/formats.md): big endian, 44-byte header. */
enum { WIRE_VERSION = 2, WIRE_HEADER_LEN = 44, WIRE_HEADER_LEN_V1 = 40 };
enum { WIRE_REQUEST = 1, WIRE_REPLY = 2 };

/* wire_decode's verdicts, in the order of internal/wire's errors. */
enum wire_err { WIRE_OK, WIRE_SHORT, WIRE_MAGIC, WIRE_VERSION_ERR, WIRE_TYPE, WIRE_LENGTH, WIRE_RUNID };

struct wire_hdr {
	uint8_t version, type;
	uint16_t len;
	uint64_t run_id;
	uint32_t arm, round;
	uint64_t seq;
	int64_t due;
	uint32_t responder;
};

/* wire_decode parses b[0:n] as wire.Decode does (run_id 0: any run). */
enum wire_err wire_decode(const uint8_t *b, size_t n, uint64_t run_id, struct wire_hdr *h);
/* wire_make_reply turns a decoded request into responder id's reply in place. */
void wire_make_reply(uint8_t *b, uint32_t id);
/* wire_encode_request writes request h as b[0:size] (wire.Encode; size ≥ 44). */
void wire_encode_request(uint8_t *b, size_t size, const struct wire_hdr *h);
/* wire_foreign: the verdicts the responder counts as foreign, not malformed. */
static inline int wire_foreign(enum wire_err e) { return e == WIRE_SHORT || e == WIRE_MAGIC || e == WIRE_RUNID; }

/* The responder's columns (samples.RoleResponder's order). */
enum { REQ_RX_HW, REQ_RX_SW, REQ_RX_USER, REP_TX_USER, REP_TX_SW, REP_TX_HW, NSTAMPS };
enum { FLAG_DUPLICATE = 1 }; /* samples.FlagDuplicate */

struct rec {
	int64_t t[NSTAMPS];
	uint64_t flags;
};

/* The handoff header's fields, in file order (docs/formats.md). */
enum {
	H_RECORDS, H_CAPACITY, H_RECEIVED, H_SENT, H_DUPLICATED, H_FOREIGN, H_MALFORMED, H_OUT_OF_RANGE,
	H_SEND_ERRORS, H_LOOP_START, H_LOOP_END, H_THREAD_OK, H_THREAD_WALL, H_THREAD_CPU, H_THREAD_VOL,
	H_THREAD_INVOL, H_NAPI_ID, H_STOP_SIGNAL, H_KEYING, H_CALLS_RECVMSG, H_CALLS_SENDMSG, H_CALLS_TX_READS,
	H_CALLS_WAITS, H_CALLS_RING_OPS, H_CALLS_SETSOCKOPT, H_CALLS_SOCKET,
	H_NFIELDS
};
enum { HANDOFF_VERSION = 1 };

/* handoff_write writes the header and the answered records to fd. */
int handoff_write(int fd, const uint64_t h[H_NFIELDS], const struct rec *recs, uint64_t capacity);

/* The writer both handoffs share: begin (magic, version, header), put
 * (one little-endian u64 after it), end (flush). */
int handoff_begin(int fd, const char magic[8], uint32_t version, uint32_t nfields, const uint64_t *h);
int handoff_put(int fd, uint64_t v);
int handoff_end(int fd);

/* The native sender's handoff header (send.c, docs/formats.md). */
enum {
	SH_COUNT, SH_SENT, SH_SEND_ERRORS, SH_FOREIGN, SH_MALFORMED, SH_DUPLICATED, SH_REORDERED, SH_TX_LATE,
	SH_LOOP_START, SH_LOOP_END, SH_THREAD_OK, SH_THREAD_WALL, SH_THREAD_CPU, SH_THREAD_VOL, SH_THREAD_INVOL,
	SH_STOP_SIGNAL, SH_KEYING, SH_CALLS_RECVMSG, SH_CALLS_SENDMSG, SH_CALLS_TX_READS, SH_CALLS_WAITS,
	SH_CALLS_SETSOCKOPT, SH_CALLS_SOCKET, SH_FAIL_CALL, SH_FAIL_ERRNO,
	SH_NFIELDS
};
enum { SEND_HANDOFF_VERSION = 2 };
/* The call whose failure ended the sender's loop (SH_FAIL_CALL). */
enum { FAIL_NONE, FAIL_PPOLL, FAIL_RECVMSG };

/* The noise probe's handoff header (noise.c, docs/formats.md). */
enum {
	N_CPU, N_FIFO, N_COUNTER, N_NOMINAL_HZ, N_RATE_TICKS, N_RATE_NS, N_CHECK_TICKS, N_CHECK_NS,
	N_START_MONO, N_END_MONO, N_START_REAL, N_END_REAL, N_READS, N_TICK_PS, N_MIN_READ_PS, N_TYPICAL_READ_PS,
	N_THRESH_0, N_THRESH_1, N_THRESH_2, N_THRESH_3, N_COUNT_0, N_COUNT_1, N_COUNT_2, N_COUNT_3,
	N_GAP_TOTAL_NS, N_LONGEST_NS, N_HIST_BASE_NS, N_HIST_BINS, N_KEEP, N_GAPS,
	N_THREAD_OK, N_THREAD_WALL, N_THREAD_CPU, N_THREAD_VOL, N_THREAD_INVOL, N_STOP_SIGNAL,
	N_NFIELDS
};
enum { NOISE_HANDOFF_VERSION = 1, NOISE_THRESHOLDS = 4, NOISE_HIST_BINS = 24 };
enum { COUNTER_TSC = 1, COUNTER_CNTVCT = 2 };

/* Marks the loop's bounds for an interposer that counts libc calls per
 * phase (native/test/interpose.c): 1 loop starts, 2 loop ended. Weak: a
 * no-op unless a preloaded library defines it. */
void rig_native_phase(int phase) __attribute__((weak));

#endif
