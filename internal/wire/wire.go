// Package wire is the rig's probe packet format: the UDP payload of every
// request and reply.
//
// Layout (big endian), HeaderLen = 44 bytes, then zero padding up to the
// configured size (default 64 bytes of UDP payload):
//
//	off len field
//	  0   4 magic 'R' 'I' 'G' 0xA7
//	  4   1 version (Version)
//	  5   1 type: 1 request, 2 reply
//	  6   2 length of the whole payload, padding included
//	  8   8 run id (random per run; foreign and stale packets are rejected)
//	 16   4 arm index
//	 20   4 round index
//	 24   8 sequence number within the round
//	 32   8 due: the sender's scheduled send time, CLOCK_REALTIME ns
//	 40   4 responder id: 0 in a request; in a reply, the id of the
//	        responder that answered (several may answer one multicast
//	        request)
//
// A reply is the request with the type and responder id changed, so the
// responder does no work beyond five bytes. Encode and Decode work in
// caller buffers and never allocate.
//
// Version 1 packets (40-byte header, no responder id) still decode, with
// responder id 0: a version 1 reply came from the only responder.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Version is the wire format version; it changes with any layout change.
// Version 2 added the responder id.
const Version = 2

// HeaderLen is the smallest valid payload of this version.
const HeaderLen = 44

// headerLenV1 is the header of version 1 packets, still decoded.
const headerLenV1 = 40

// DefaultSize is the default UDP payload size.
const DefaultSize = 64

// MaxSize keeps a probe within one Ethernet frame (1500 − 20 IP − 8 UDP):
// only the first fragment of a datagram gets a timestamp.
const MaxSize = 1472

var magic = [4]byte{'R', 'I', 'G', 0xA7}

// Type tells a request from a reply.
type Type uint8

const (
	Request Type = 1
	Reply   Type = 2
)

func (t Type) String() string {
	switch t {
	case Request:
		return "request"
	case Reply:
		return "reply"
	}
	return fmt.Sprintf("type(%d)", uint8(t))
}

// Header is the decoded fixed part of a packet.
type Header struct {
	// Version is the decoded packet's format version (Encode always
	// writes Version).
	Version   uint8
	Type      Type
	Len       uint16
	RunID     uint64
	Arm       uint32
	Round     uint32
	Seq       uint64
	Due       int64
	Responder uint32 // the answering responder's id (replies)
}

// Errors returned by Decode. They are sentinel values so that the hot path
// can count them without allocating.
var (
	ErrShort   = errors.New("wire: shorter than the rig header")
	ErrMagic   = errors.New("wire: not a rig packet (bad magic)")
	ErrVersion = errors.New("wire: unsupported wire format version")
	ErrType    = errors.New("wire: unknown packet type")
	ErrLength  = errors.New("wire: length field does not match the datagram")
	ErrRunID   = errors.New("wire: packet from another run")
)

// CheckSize validates a configured payload size.
func CheckSize(size int) error {
	if size < HeaderLen || size > MaxSize {
		return fmt.Errorf("payload size %d out of range: use %d..%d bytes (default %d)", size, HeaderLen, MaxSize, DefaultSize)
	}
	return nil
}

// Encode writes h into b[:size] with zero padding and returns the payload.
// h.Len is ignored; the length written is size. It panics only on a
// programming error (size out of range or b too small), which CheckSize
// prevents at configuration time.
func Encode(b []byte, size int, h *Header) []byte {
	b = b[:size]
	copy(b[0:4], magic[:])
	b[4] = Version
	b[5] = byte(h.Type)
	binary.BigEndian.PutUint16(b[6:8], uint16(size))
	binary.BigEndian.PutUint64(b[8:16], h.RunID)
	binary.BigEndian.PutUint32(b[16:20], h.Arm)
	binary.BigEndian.PutUint32(b[20:24], h.Round)
	binary.BigEndian.PutUint64(b[24:32], h.Seq)
	binary.BigEndian.PutUint64(b[32:40], uint64(h.Due))
	binary.BigEndian.PutUint32(b[40:44], h.Responder)
	clear(b[HeaderLen:])
	return b
}

// Decode parses b into h. It rejects anything that is not a rig packet of
// version 1 or 2; when runID is non-zero it also rejects other runs.
func Decode(b []byte, runID uint64, h *Header) error {
	if len(b) < headerLenV1 {
		return ErrShort
	}
	if b[0] != magic[0] || b[1] != magic[1] || b[2] != magic[2] || b[3] != magic[3] {
		return ErrMagic
	}
	v := b[4]
	switch {
	case v == 1:
	case v == Version:
		if len(b) < HeaderLen {
			return ErrShort
		}
	default:
		return ErrVersion
	}
	t := Type(b[5])
	if t != Request && t != Reply {
		return ErrType
	}
	n := binary.BigEndian.Uint16(b[6:8])
	if int(n) != len(b) {
		return ErrLength
	}
	id := binary.BigEndian.Uint64(b[8:16])
	if runID != 0 && id != runID {
		return ErrRunID
	}
	h.Version = v
	h.Type = t
	h.Len = n
	h.RunID = id
	h.Arm = binary.BigEndian.Uint32(b[16:20])
	h.Round = binary.BigEndian.Uint32(b[20:24])
	h.Seq = binary.BigEndian.Uint64(b[24:32])
	h.Due = int64(binary.BigEndian.Uint64(b[32:40]))
	h.Responder = 0
	if v >= 2 {
		h.Responder = binary.BigEndian.Uint32(b[40:44])
	}
	return nil
}

// MakeReply turns a request in b, validated by Decode, into responder id's
// reply in place. A version 1 request has no room for the id: its reply
// goes without one (a version 1 sender knows one responder).
func MakeReply(b []byte, id uint32) {
	b[5] = byte(Reply)
	if b[4] >= 2 {
		binary.BigEndian.PutUint32(b[40:44], id)
	}
}
