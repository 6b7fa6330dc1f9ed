/* Wire format 2, as internal/wire reads and answers it. */
#include <string.h>

#include "rig.h"

static uint16_t be16(const uint8_t *b) { return (uint16_t)(b[0] << 8 | b[1]); }
static uint32_t be32(const uint8_t *b) { return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]; }
static uint64_t be64(const uint8_t *b) { return (uint64_t)be32(b) << 32 | be32(b + 4); }

enum wire_err wire_decode(const uint8_t *b, size_t n, uint64_t run_id, struct wire_hdr *h)
{
	if (n < WIRE_HEADER_LEN_V1)
		return WIRE_SHORT;
	if (b[0] != 'R' || b[1] != 'I' || b[2] != 'G' || b[3] != 0xA7)
		return WIRE_MAGIC;
	uint8_t v = b[4];
	if (v == WIRE_VERSION) {
		if (n < WIRE_HEADER_LEN)
			return WIRE_SHORT;
	} else if (v != 1) {
		return WIRE_VERSION_ERR;
	}
	if (b[5] != WIRE_REQUEST && b[5] != WIRE_REPLY)
		return WIRE_TYPE;
	if (be16(b + 6) != n)
		return WIRE_LENGTH;
	uint64_t id = be64(b + 8);
	if (run_id != 0 && id != run_id)
		return WIRE_RUNID;
	h->version = v;
	h->type = b[5];
	h->len = be16(b + 6);
	h->run_id = id;
	h->arm = be32(b + 16);
	h->round = be32(b + 20);
	h->seq = be64(b + 24);
	h->due = (int64_t)be64(b + 32);
	h->responder = v >= 2 ? be32(b + 40) : 0;
	return WIRE_OK;
}

void wire_make_reply(uint8_t *b, uint32_t id)
{
	b[5] = WIRE_REPLY;
	if (b[4] >= 2) {
		b[40] = (uint8_t)(id >> 24);
		b[41] = (uint8_t)(id >> 16);
		b[42] = (uint8_t)(id >> 8);
		b[43] = (uint8_t)id;
	}
}

static void put_be(uint8_t *b, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		b[i] = (uint8_t)v;
}

void wire_encode_request(uint8_t *b, size_t size, const struct wire_hdr *h)
{
	b[0] = 'R', b[1] = 'I', b[2] = 'G', b[3] = 0xA7;
	b[4] = WIRE_VERSION;
	b[5] = WIRE_REQUEST;
	put_be(b + 6, size, 2);
	put_be(b + 8, h->run_id, 8);
	put_be(b + 16, h->arm, 4);
	put_be(b + 20, h->round, 4);
	put_be(b + 24, h->seq, 8);
	put_be(b + 32, (uint64_t)h->due, 8);
	put_be(b + 40, 0, 4);
	memset(b + WIRE_HEADER_LEN, 0, size - WIRE_HEADER_LEN);
}
