/* The handoffs: what a native program hands rig after its loop
 * (docs/formats.md#the-native-handoff), written through one buffer,
 * little endian. The responder's:
 *
 *	"RIGNATV\n"          8 bytes magic
 *	u32 version          HANDOFF_VERSION
 *	u32 n                header fields that follow (H_NFIELDS in this version)
 *	n × u64              the header (rig.h's H_* order)
 *	records × 64 bytes   u64 seq, u64 flags, 6 × i64 stamps (REQ_RX_HW..REP_TX_HW)
 *
 * Only answered sequences are written, in increasing order. The noise
 * probe's (noise.c) starts the same way with its own magic. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "rig.h"

static unsigned char out[1 << 16];
static size_t used;

static int flush(int fd)
{
	size_t off = 0;
	while (off < used) {
		ssize_t n = write(fd, out + off, used - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	used = 0;
	return 0;
}

int handoff_put(int fd, uint64_t v)
{
	if (used + 8 > sizeof out && flush(fd) < 0)
		return -1;
	for (int i = 0; i < 8; i++)
		out[used++] = (unsigned char)(v >> (8 * i));
	return 0;
}

int handoff_begin(int fd, const char magic[8], uint32_t version, uint32_t nfields, const uint64_t *h)
{
	memcpy(out, magic, 8);
	used = 8;
	if (handoff_put(fd, (uint64_t)nfields << 32 | version) < 0)
		return -1;
	for (uint32_t i = 0; i < nfields; i++)
		if (handoff_put(fd, h[i]) < 0)
			return -1;
	return 0;
}

int handoff_end(int fd) { return flush(fd); }

int handoff_write(int fd, const uint64_t h[H_NFIELDS], const struct rec *recs, uint64_t capacity)
{
	if (handoff_begin(fd, "RIGNATV\n", HANDOFF_VERSION, H_NFIELDS, h) < 0)
		return -1;
	for (uint64_t seq = 0; seq < capacity; seq++) {
		const struct rec *r = &recs[seq];
		if (r->t[REQ_RX_USER] == 0)
			continue;
		if (handoff_put(fd, seq) < 0 || handoff_put(fd, r->flags) < 0)
			return -1;
		for (int i = 0; i < NSTAMPS; i++)
			if (handoff_put(fd, (uint64_t)r->t[i]) < 0)
				return -1;
	}
	return handoff_end(fd);
}
