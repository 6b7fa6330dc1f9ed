/* rig-wire-check: the native wire codec on stdin, for the Go cross-check
 * (responder's TestWireCrossCheck): Go encodes, this decodes and answers,
 * Go compares with its own Decode, classification and MakeReply.
 *
 * In, per case (little endian): u64 run id, u32 n, n bytes.
 * Out, per case: u8 verdict (enum wire_err), u8 foreign; with verdict 0 the
 * header (u8 version, u8 type, u16 len, u64 run id, u32 arm, u32 round,
 * u64 seq, i64 due, u32 responder) and the n bytes of the reply made with
 * responder id 0xA1B2C3D4. */
#include <stdio.h>
#include <string.h>

#include "../rig.h"

static int get(void *p, size_t n) { return fread(p, 1, n, stdin) == n; }

static void put(uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		putchar((int)(v >> (8 * i)) & 0xff);
}

int main(void)
{
	static uint8_t b[65536];
	uint8_t hdr[12];
	while (get(hdr, sizeof hdr)) {
		uint64_t run = 0;
		uint32_t n = 0;
		for (int i = 0; i < 8; i++)
			run |= (uint64_t)hdr[i] << (8 * i);
		for (int i = 0; i < 4; i++)
			n |= (uint32_t)hdr[8 + i] << (8 * i);
		if (n > sizeof b || !get(b, n))
			return 1;
		struct wire_hdr h;
		enum wire_err e = wire_decode(b, n, run, &h);
		put(e, 1);
		put(e != WIRE_OK && wire_foreign(e), 1);
		if (e == WIRE_OK) {
			put(h.version, 1), put(h.type, 1), put(h.len, 2), put(h.run_id, 8), put(h.arm, 4);
			put(h.round, 4), put(h.seq, 8), put((uint64_t)h.due, 8), put(h.responder, 4);
			wire_make_reply(b, 0xA1B2C3D4);
			fwrite(b, 1, n, stdout);
		}
		fflush(stdout);
	}
	return 0;
}
