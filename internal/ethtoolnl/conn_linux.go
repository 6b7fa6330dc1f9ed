package ethtoolnl

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/mdlayher/genetlink"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Conn is an ethtool genetlink connection in the caller's network namespace.
type Conn struct {
	c      *genetlink.Conn
	family uint16
}

var _ Client = (*Conn)(nil)

// Dial opens a genetlink socket in the current network namespace (run the
// process in the target netns, e.g. with `ip netns exec`). It fails with an
// error matching errors.ErrUnsupported if the kernel has no ethtool netlink.
func Dial() (*Conn, error) {
	c, err := genetlink.Dial(&netlink.Config{Strict: true})
	if err != nil {
		return nil, fmt.Errorf("genetlink: %w", err)
	}
	cc, err := NewConn(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	return cc, nil
}

// NewConn wraps an existing genetlink connection (a genltest one in tests).
func NewConn(c *genetlink.Conn) (*Conn, error) {
	f, err := c.GetFamily(unix.ETHTOOL_GENL_NAME)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("genetlink family %q not found (kernel without ethtool netlink, < 5.6): %w",
				unix.ETHTOOL_GENL_NAME, errors.ErrUnsupported)
		}
		return nil, fmt.Errorf("genetlink family %q: %w", unix.ETHTOOL_GENL_NAME, err)
	}
	return &Conn{c: c, family: f.ID}, nil
}

// Close closes the socket.
func (c *Conn) Close() error { return c.c.Close() }

var opNames = map[uint8]string{
	unix.ETHTOOL_MSG_COALESCE_GET: "COALESCE_GET", unix.ETHTOOL_MSG_COALESCE_SET: "COALESCE_SET",
	unix.ETHTOOL_MSG_RINGS_GET: "RINGS_GET", unix.ETHTOOL_MSG_RINGS_SET: "RINGS_SET",
	unix.ETHTOOL_MSG_CHANNELS_GET: "CHANNELS_GET", unix.ETHTOOL_MSG_CHANNELS_SET: "CHANNELS_SET",
	unix.ETHTOOL_MSG_TSINFO_GET: "TSINFO_GET",
}

// do sends one request whose first attribute is the nested request header
// naming iface, followed by whatever attrs encodes.
func (c *Conn) do(ctx context.Context, cmd uint8, hdrAttr uint16, iface string, attrs func(*netlink.AttributeEncoder)) (*netlink.AttributeDecoder, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.Nested(hdrAttr, func(n *netlink.AttributeEncoder) error {
		n.String(unix.ETHTOOL_A_HEADER_DEV_NAME, iface)
		return nil
	})
	set := attrs != nil
	if set {
		attrs(ae)
	}
	body, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	flags := netlink.Request
	if set {
		flags |= netlink.Acknowledge
	}
	msgs, err := c.c.Execute(genetlink.Message{
		Header: genetlink.Header{Command: cmd, Version: unix.ETHTOOL_GENL_VERSION},
		Data:   body,
	}, c.family, flags)
	if err != nil {
		e := &Error{Op: opNames[cmd], Iface: iface, Err: err}
		var oe *netlink.OpError
		if errors.As(err, &oe) {
			e.Err, e.Message = oe.Err, oe.Message
		}
		return nil, e
	}
	if set {
		return nil, nil
	}
	if len(msgs) != 1 {
		return nil, &Error{Op: opNames[cmd], Iface: iface, Err: fmt.Errorf("expected 1 reply, got %d", len(msgs))}
	}
	ad, err := netlink.NewAttributeDecoder(msgs[0].Data)
	if err != nil {
		return nil, &Error{Op: opNames[cmd], Iface: iface, Err: err}
	}
	return ad, nil
}

func u32p(ad *netlink.AttributeDecoder) *uint32 { v := ad.Uint32(); return &v }
func boolp(ad *netlink.AttributeDecoder) *bool  { v := ad.Uint8() != 0; return &v }

func putU32(ae *netlink.AttributeEncoder, t uint16, v *uint32) {
	if v != nil {
		ae.Uint32(t, *v)
	}
}

func putBool(ae *netlink.AttributeEncoder, t uint16, v *bool) {
	if v != nil {
		var b uint8
		if *v {
			b = 1
		}
		ae.Uint8(t, b)
	}
}

func decodeErr(op, iface string, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Op: op, Iface: iface, Err: fmt.Errorf("decoding reply: %w", err)}
}

// Coalesce reads interrupt moderation. Attributes the driver does not
// support are nil.
func (c *Conn) Coalesce(ctx context.Context, iface string) (Coalesce, error) {
	ad, err := c.do(ctx, unix.ETHTOOL_MSG_COALESCE_GET, unix.ETHTOOL_A_COALESCE_HEADER, iface, nil)
	if err != nil {
		return Coalesce{}, err
	}
	var r Coalesce
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_COALESCE_RX_USECS:
			r.RxUsecs = u32p(ad)
		case unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES:
			r.RxFrames = u32p(ad)
		case unix.ETHTOOL_A_COALESCE_TX_USECS:
			r.TxUsecs = u32p(ad)
		case unix.ETHTOOL_A_COALESCE_TX_MAX_FRAMES:
			r.TxFrames = u32p(ad)
		case unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX:
			r.AdaptiveRx = boolp(ad)
		case unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX:
			r.AdaptiveTx = boolp(ad)
		}
	}
	return r, decodeErr("COALESCE_GET", iface, ad.Err())
}

// SetCoalesce changes the non-nil fields of s.
func (c *Conn) SetCoalesce(ctx context.Context, iface string, s Coalesce) error {
	_, err := c.do(ctx, unix.ETHTOOL_MSG_COALESCE_SET, unix.ETHTOOL_A_COALESCE_HEADER, iface, func(ae *netlink.AttributeEncoder) {
		putU32(ae, unix.ETHTOOL_A_COALESCE_RX_USECS, s.RxUsecs)
		putU32(ae, unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES, s.RxFrames)
		putU32(ae, unix.ETHTOOL_A_COALESCE_TX_USECS, s.TxUsecs)
		putU32(ae, unix.ETHTOOL_A_COALESCE_TX_MAX_FRAMES, s.TxFrames)
		putBool(ae, unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, s.AdaptiveRx)
		putBool(ae, unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX, s.AdaptiveTx)
	})
	return err
}

// Rings reads ring sizes and their maxima.
func (c *Conn) Rings(ctx context.Context, iface string) (Rings, error) {
	ad, err := c.do(ctx, unix.ETHTOOL_MSG_RINGS_GET, unix.ETHTOOL_A_RINGS_HEADER, iface, nil)
	if err != nil {
		return Rings{}, err
	}
	var r Rings
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_RINGS_RX_MAX:
			r.RxMax = u32p(ad)
		case unix.ETHTOOL_A_RINGS_TX_MAX:
			r.TxMax = u32p(ad)
		case unix.ETHTOOL_A_RINGS_RX:
			r.Rx = u32p(ad)
		case unix.ETHTOOL_A_RINGS_TX:
			r.Tx = u32p(ad)
		case unix.ETHTOOL_A_RINGS_TX_PUSH:
			r.TxPush = boolp(ad)
		case unix.ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN:
			r.TxPushBufLen = u32p(ad)
		case unix.ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN_MAX:
			r.TxPushBufLenMax = u32p(ad)
		}
	}
	return r, decodeErr("RINGS_GET", iface, ad.Err())
}

// SetRings changes the non-nil Rx and Tx sizes; the maxima are ignored.
// Drivers may round or clamp without error: read back.
func (c *Conn) SetRings(ctx context.Context, iface string, s Rings) error {
	_, err := c.do(ctx, unix.ETHTOOL_MSG_RINGS_SET, unix.ETHTOOL_A_RINGS_HEADER, iface, func(ae *netlink.AttributeEncoder) {
		putU32(ae, unix.ETHTOOL_A_RINGS_RX, s.Rx)
		putU32(ae, unix.ETHTOOL_A_RINGS_TX, s.Tx)
	})
	return err
}

// Channels reads queue counts and their maxima.
func (c *Conn) Channels(ctx context.Context, iface string) (Channels, error) {
	ad, err := c.do(ctx, unix.ETHTOOL_MSG_CHANNELS_GET, unix.ETHTOOL_A_CHANNELS_HEADER, iface, nil)
	if err != nil {
		return Channels{}, err
	}
	var r Channels
	for ad.Next() {
		switch ad.Type() {
		case unix.ETHTOOL_A_CHANNELS_RX_MAX:
			r.RxMax = u32p(ad)
		case unix.ETHTOOL_A_CHANNELS_TX_MAX:
			r.TxMax = u32p(ad)
		case unix.ETHTOOL_A_CHANNELS_OTHER_MAX:
			r.OtherMax = u32p(ad)
		case unix.ETHTOOL_A_CHANNELS_COMBINED_MAX:
			r.CombinedMax = u32p(ad)
		case unix.ETHTOOL_A_CHANNELS_RX_COUNT:
			r.Rx = u32p(ad)
		case unix.ETHTOOL_A_CHANNELS_TX_COUNT:
			r.Tx = u32p(ad)
		case unix.ETHTOOL_A_CHANNELS_OTHER_COUNT:
			r.Other = u32p(ad)
		case unix.ETHTOOL_A_CHANNELS_COMBINED_COUNT:
			r.Combined = u32p(ad)
		}
	}
	return r, decodeErr("CHANNELS_GET", iface, ad.Err())
}

// SetChannels changes the non-nil counts; the maxima are ignored.
func (c *Conn) SetChannels(ctx context.Context, iface string, s Channels) error {
	_, err := c.do(ctx, unix.ETHTOOL_MSG_CHANNELS_SET, unix.ETHTOOL_A_CHANNELS_HEADER, iface, func(ae *netlink.AttributeEncoder) {
		putU32(ae, unix.ETHTOOL_A_CHANNELS_RX_COUNT, s.Rx)
		putU32(ae, unix.ETHTOOL_A_CHANNELS_TX_COUNT, s.Tx)
		putU32(ae, unix.ETHTOOL_A_CHANNELS_OTHER_COUNT, s.Other)
		putU32(ae, unix.ETHTOOL_A_CHANNELS_COMBINED_COUNT, s.Combined)
	})
	return err
}
