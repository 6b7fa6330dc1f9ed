package ethtoolnl

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/genetlink/genltest"
	"github.com/mdlayher/netlink"
	"github.com/mdlayher/netlink/nltest"
	"golang.org/x/sys/unix"
)

const famID = 0x1d

// hdr is the nested request header naming "veth0", as the kernel expects:
// nla_len 16, type 1|NLA_F_NESTED, then DEV_NAME (2) "veth0\0" padded.
var hdr = []byte{
	0x10, 0x00, 0x01, 0x80,
	0x0a, 0x00, 0x02, 0x00, 'v', 'e', 't', 'h', '0', 0x00, 0x00, 0x00,
}

func u32attr(typ uint16, v uint32) []byte {
	b := make([]byte, 8)
	binary.NativeEndian.PutUint16(b[0:], 8)
	binary.NativeEndian.PutUint16(b[2:], typ)
	binary.NativeEndian.PutUint32(b[4:], v)
	return b
}

func u8attr(typ uint16, v uint8) []byte {
	b := []byte{5, 0, 0, 0, v, 0, 0, 0}
	binary.NativeEndian.PutUint16(b[2:], typ)
	return b
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// dial serves one expected request: it checks command, flags and the exact
// request bytes, then answers with reply (nil: an ack).
func dial(t *testing.T, cmd uint8, flags netlink.HeaderFlags, want []byte, reply []byte) *Conn {
	t.Helper()
	fn := genltest.CheckRequest(famID, cmd, flags, func(greq genetlink.Message, _ netlink.Message) ([]genetlink.Message, error) {
		if greq.Header.Version != unix.ETHTOOL_GENL_VERSION {
			t.Errorf("version %d", greq.Header.Version)
		}
		if !bytes.Equal(greq.Data, want) {
			t.Errorf("request bytes\n got %x\nwant %x", greq.Data, want)
		}
		if reply == nil {
			// SET: the kernel answers with an ack only.
			return []genetlink.Message{{}}, nil
		}
		return []genetlink.Message{{Header: genetlink.Header{Command: cmd + 1, Version: unix.ETHTOOL_GENL_VERSION}, Data: reply}}, nil
	})
	c, err := NewConn(genltest.Dial(genltest.ServeFamily(genetlink.Family{ID: famID, Name: unix.ETHTOOL_GENL_NAME, Version: 1}, fn)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestChannels(t *testing.T) {
	ctx := context.Background()
	reply := cat(hdr, u32attr(unix.ETHTOOL_A_CHANNELS_RX_MAX, 4), u32attr(unix.ETHTOOL_A_CHANNELS_TX_MAX, 4),
		u32attr(unix.ETHTOOL_A_CHANNELS_RX_COUNT, 4), u32attr(unix.ETHTOOL_A_CHANNELS_TX_COUNT, 4))
	c := dial(t, unix.ETHTOOL_MSG_CHANNELS_GET, netlink.Request, hdr, reply)
	ch, err := c.Channels(ctx, "veth0")
	if err != nil || *ch.RxMax != 4 || *ch.Tx != 4 || ch.Combined != nil || ch.CombinedMax != nil {
		t.Fatalf("%+v %v", ch, err)
	}
	c = dial(t, unix.ETHTOOL_MSG_CHANNELS_SET, netlink.Request|netlink.Acknowledge,
		cat(hdr, u32attr(unix.ETHTOOL_A_CHANNELS_RX_COUNT, 2), u32attr(unix.ETHTOOL_A_CHANNELS_TX_COUNT, 2)), nil)
	if err := c.SetChannels(ctx, "veth0", Channels{Rx: new(uint32(2)), Tx: new(uint32(2)), RxMax: new(uint32(99))}); err != nil {
		t.Fatal(err)
	}
}

func TestRings(t *testing.T) {
	ctx := context.Background()
	reply := cat(hdr, u32attr(unix.ETHTOOL_A_RINGS_RX_MAX, 16384), u32attr(unix.ETHTOOL_A_RINGS_TX_MAX, 1024),
		u32attr(unix.ETHTOOL_A_RINGS_RX, 1024), u32attr(unix.ETHTOOL_A_RINGS_TX, 512), u8attr(unix.ETHTOOL_A_RINGS_TX_PUSH, 0))
	c := dial(t, unix.ETHTOOL_MSG_RINGS_GET, netlink.Request, hdr, reply)
	r, err := c.Rings(ctx, "veth0")
	if err != nil || *r.RxMax != 16384 || *r.TxMax != 1024 || *r.Rx != 1024 || *r.Tx != 512 {
		t.Fatalf("%+v %v", r, err)
	}
	c = dial(t, unix.ETHTOOL_MSG_RINGS_SET, netlink.Request|netlink.Acknowledge, cat(hdr, u32attr(unix.ETHTOOL_A_RINGS_RX, 4096)), nil)
	if err := c.SetRings(ctx, "veth0", Rings{Rx: new(uint32(4096))}); err != nil {
		t.Fatal(err)
	}
}

func TestCoalesce(t *testing.T) {
	ctx := context.Background()
	reply := cat(hdr, u32attr(unix.ETHTOOL_A_COALESCE_RX_USECS, 20), u32attr(unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES, 1),
		u32attr(unix.ETHTOOL_A_COALESCE_TX_USECS, 64), u8attr(unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, 1))
	c := dial(t, unix.ETHTOOL_MSG_COALESCE_GET, netlink.Request, hdr, reply)
	co, err := c.Coalesce(ctx, "veth0")
	if err != nil || *co.RxUsecs != 20 || *co.RxFrames != 1 || *co.TxUsecs != 64 || !*co.AdaptiveRx || co.AdaptiveTx != nil || co.TxFrames != nil {
		t.Fatalf("%+v %v", co, err)
	}
	c = dial(t, unix.ETHTOOL_MSG_COALESCE_SET, netlink.Request|netlink.Acknowledge,
		cat(hdr, u32attr(unix.ETHTOOL_A_COALESCE_RX_USECS, 0), u32attr(unix.ETHTOOL_A_COALESCE_TX_USECS, 0), u8attr(unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, 0)), nil)
	if err := c.SetCoalesce(ctx, "veth0", Coalesce{RxUsecs: new(uint32(0)), TxUsecs: new(uint32(0)), AdaptiveRx: new(false)}); err != nil {
		t.Fatal(err)
	}
}

func nested(typ uint16, body []byte) []byte {
	b := make([]byte, 4, 4+len(body))
	binary.NativeEndian.PutUint16(b[0:], uint16(4+len(body)))
	binary.NativeEndian.PutUint16(b[2:], typ|unix.NLA_F_NESTED)
	return append(b, body...)
}

func strattr(typ uint16, s string) []byte {
	n := 4 + len(s) + 1
	b := make([]byte, (n+3)&^3)
	binary.NativeEndian.PutUint16(b[0:], uint16(n))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], s)
	return b
}

// TestExtackReachesUser builds the kernel's NLMSG_ERROR with an extended
// ack (NLMSGERR_ATTR_MSG) byte for byte and checks the text ends up in the
// error the user sees.
func TestExtackReachesUser(t *testing.T) {
	const text = "requested channel count exceeds maximum"
	nc := nltest.Dial(func(reqs []netlink.Message) ([]netlink.Message, error) {
		req := reqs[0]
		data := make([]byte, 4)
		errno := -int32(unix.EINVAL)
		binary.NativeEndian.PutUint32(data, uint32(errno))
		// The request's nlmsghdr, capped (no payload). mdlayher/netlink finds
		// the TLVs at 4+nlmsg_len of this copy, so it carries 16.
		h := make([]byte, 16)
		binary.NativeEndian.PutUint32(h[0:], 16)
		binary.NativeEndian.PutUint16(h[4:], uint16(req.Header.Type))
		binary.NativeEndian.PutUint16(h[6:], uint16(req.Header.Flags))
		binary.NativeEndian.PutUint32(h[8:], req.Header.Sequence)
		binary.NativeEndian.PutUint32(h[12:], req.Header.PID)
		data = cat(data, h, strattr(unix.NLMSGERR_ATTR_MSG, text), u32attr(unix.NLMSGERR_ATTR_OFFS, 32))
		return []netlink.Message{{Header: netlink.Header{Type: netlink.Error, Flags: netlink.Capped | netlink.AcknowledgeTLVs,
			Sequence: req.Header.Sequence, PID: req.Header.PID}, Data: data}}, nil
	})
	c := &Conn{c: genetlink.NewConn(nc), family: famID}
	defer c.Close()
	err := c.SetChannels(context.Background(), "veth0", Channels{Rx: new(uint32(8))})
	var e *Error
	if !errors.As(err, &e) || e.Message != text || !errors.Is(err, unix.EINVAL) {
		t.Fatalf("got %#v", err)
	}
	if want := "ethtool CHANNELS_SET veth0: " + text + " (invalid argument)"; err.Error() != want {
		t.Fatalf("message %q, want %q", err.Error(), want)
	}
}

func TestErrnoMapping(t *testing.T) {
	for _, c := range []struct {
		errno int
		is    error
		text  string
	}{
		{int(unix.EOPNOTSUPP), errors.ErrUnsupported, "not supported by this driver"},
		{int(unix.ENODEV), os.ErrNotExist, "no such interface"},
		{int(unix.EPERM), unix.EPERM, "CAP_NET_ADMIN"},
	} {
		fn := func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
			return nil, genltest.Error(c.errno)
		}
		conn, err := NewConn(genltest.Dial(genltest.ServeFamily(genetlink.Family{ID: famID, Name: unix.ETHTOOL_GENL_NAME}, fn)))
		if err != nil {
			t.Fatal(err)
		}
		err = conn.SetCoalesce(context.Background(), "veth0", Coalesce{RxUsecs: new(uint32(1))})
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("errno %d: %v", c.errno, err)
		}
		conn.Close()
	}
}

// FuzzReplies feeds arbitrary attribute bytes to every GET decoder: no
// panic, and a reply that decodes has sane bitsets.
func FuzzReplies(f *testing.F) {
	bit := nested(unix.ETHTOOL_A_BITSET_BITS_BIT, cat(u32attr(unix.ETHTOOL_A_BITSET_BIT_INDEX, 70), strattr(unix.ETHTOOL_A_BITSET_BIT_NAME, "x")))
	f.Add(cat(hdr, nested(unix.ETHTOOL_A_TSINFO_TIMESTAMPING, cat([]byte{4, 0, 1, 0}, nested(unix.ETHTOOL_A_BITSET_BITS, bit)))))
	f.Add(cat(hdr, u32attr(unix.ETHTOOL_A_COALESCE_RX_USECS, 3), u8attr(unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, 1)))
	f.Add(cat(hdr, u32attr(unix.ETHTOOL_A_CHANNELS_COMBINED_MAX, 8)))
	f.Add([]byte{0xff, 0xff, 0x02, 0x00})
	var reply []byte
	fn := func(genetlink.Message, netlink.Message) ([]genetlink.Message, error) {
		return []genetlink.Message{{Data: reply}}, nil
	}
	c, err := NewConn(genltest.Dial(genltest.ServeFamily(genetlink.Family{ID: famID, Name: unix.ETHTOOL_GENL_NAME}, fn)))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		reply = b
		ctx := context.Background()
		c.Coalesce(ctx, "x")
		c.Rings(ctx, "x")
		c.Channels(ctx, "x")
	})
}
