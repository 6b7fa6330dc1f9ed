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

// field is one struct field and its attribute: the one place that pairs
// them, for GET (decode) and SET (encode). A getOnly field (a maximum, TX
// push) is never sent.
type field struct {
	typ     uint16
	u32     **uint32
	b       **bool
	getOnly bool
}

func (f field) decode(ad *netlink.AttributeDecoder) {
	if f.u32 != nil {
		v := ad.Uint32()
		*f.u32 = &v
	} else {
		v := ad.Uint8() != 0
		*f.b = &v
	}
}

func (f field) encode(ae *netlink.AttributeEncoder) {
	switch {
	case f.getOnly:
	case f.u32 != nil && *f.u32 != nil:
		ae.Uint32(f.typ, **f.u32)
	case f.b != nil && *f.b != nil:
		var b uint8
		if **f.b {
			b = 1
		}
		ae.Uint8(f.typ, b)
	}
}

// get reads one GET reply into fields.
func (c *Conn) get(ctx context.Context, cmd uint8, hdrAttr uint16, iface string, fields []field) error {
	ad, err := c.do(ctx, cmd, hdrAttr, iface, nil)
	if err != nil {
		return err
	}
	for ad.Next() {
		for _, f := range fields {
			if f.typ == ad.Type() {
				f.decode(ad)
			}
		}
	}
	if err := ad.Err(); err != nil {
		return &Error{Op: opNames[cmd], Iface: iface, Err: fmt.Errorf("decoding reply: %w", err)}
	}
	return nil
}

// set sends the non-nil fields that are not getOnly.
func (c *Conn) set(ctx context.Context, cmd uint8, hdrAttr uint16, iface string, fields []field) error {
	_, err := c.do(ctx, cmd, hdrAttr, iface, func(ae *netlink.AttributeEncoder) {
		for _, f := range fields {
			f.encode(ae)
		}
	})
	return err
}

func coalesceFields(s *Coalesce) []field {
	return []field{
		{typ: unix.ETHTOOL_A_COALESCE_RX_USECS, u32: &s.RxUsecs},
		{typ: unix.ETHTOOL_A_COALESCE_RX_MAX_FRAMES, u32: &s.RxFrames},
		{typ: unix.ETHTOOL_A_COALESCE_TX_USECS, u32: &s.TxUsecs},
		{typ: unix.ETHTOOL_A_COALESCE_TX_MAX_FRAMES, u32: &s.TxFrames},
		{typ: unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_RX, b: &s.AdaptiveRx},
		{typ: unix.ETHTOOL_A_COALESCE_USE_ADAPTIVE_TX, b: &s.AdaptiveTx},
	}
}

func ringsFields(s *Rings) []field {
	return []field{
		{typ: unix.ETHTOOL_A_RINGS_RX_MAX, u32: &s.RxMax, getOnly: true},
		{typ: unix.ETHTOOL_A_RINGS_TX_MAX, u32: &s.TxMax, getOnly: true},
		{typ: unix.ETHTOOL_A_RINGS_RX, u32: &s.Rx},
		{typ: unix.ETHTOOL_A_RINGS_TX, u32: &s.Tx},
		{typ: unix.ETHTOOL_A_RINGS_TX_PUSH, b: &s.TxPush, getOnly: true},
		{typ: unix.ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN, u32: &s.TxPushBufLen, getOnly: true},
		{typ: unix.ETHTOOL_A_RINGS_TX_PUSH_BUF_LEN_MAX, u32: &s.TxPushBufLenMax, getOnly: true},
	}
}

func channelsFields(s *Channels) []field {
	return []field{
		{typ: unix.ETHTOOL_A_CHANNELS_RX_MAX, u32: &s.RxMax, getOnly: true},
		{typ: unix.ETHTOOL_A_CHANNELS_TX_MAX, u32: &s.TxMax, getOnly: true},
		{typ: unix.ETHTOOL_A_CHANNELS_OTHER_MAX, u32: &s.OtherMax, getOnly: true},
		{typ: unix.ETHTOOL_A_CHANNELS_COMBINED_MAX, u32: &s.CombinedMax, getOnly: true},
		{typ: unix.ETHTOOL_A_CHANNELS_RX_COUNT, u32: &s.Rx},
		{typ: unix.ETHTOOL_A_CHANNELS_TX_COUNT, u32: &s.Tx},
		{typ: unix.ETHTOOL_A_CHANNELS_OTHER_COUNT, u32: &s.Other},
		{typ: unix.ETHTOOL_A_CHANNELS_COMBINED_COUNT, u32: &s.Combined},
	}
}

// Coalesce reads interrupt moderation. Attributes the driver does not
// support are nil.
func (c *Conn) Coalesce(ctx context.Context, iface string) (Coalesce, error) {
	var r Coalesce
	err := c.get(ctx, unix.ETHTOOL_MSG_COALESCE_GET, unix.ETHTOOL_A_COALESCE_HEADER, iface, coalesceFields(&r))
	return r, err
}

// SetCoalesce changes the non-nil fields of s.
func (c *Conn) SetCoalesce(ctx context.Context, iface string, s Coalesce) error {
	return c.set(ctx, unix.ETHTOOL_MSG_COALESCE_SET, unix.ETHTOOL_A_COALESCE_HEADER, iface, coalesceFields(&s))
}

// Rings reads ring sizes and their maxima.
func (c *Conn) Rings(ctx context.Context, iface string) (Rings, error) {
	var r Rings
	err := c.get(ctx, unix.ETHTOOL_MSG_RINGS_GET, unix.ETHTOOL_A_RINGS_HEADER, iface, ringsFields(&r))
	return r, err
}

// SetRings changes the non-nil Rx and Tx sizes; the maxima are ignored.
// Drivers may round or clamp without error: read back.
func (c *Conn) SetRings(ctx context.Context, iface string, s Rings) error {
	return c.set(ctx, unix.ETHTOOL_MSG_RINGS_SET, unix.ETHTOOL_A_RINGS_HEADER, iface, ringsFields(&s))
}

// Channels reads queue counts and their maxima.
func (c *Conn) Channels(ctx context.Context, iface string) (Channels, error) {
	var r Channels
	err := c.get(ctx, unix.ETHTOOL_MSG_CHANNELS_GET, unix.ETHTOOL_A_CHANNELS_HEADER, iface, channelsFields(&r))
	return r, err
}

// SetChannels changes the non-nil counts; the maxima are ignored.
func (c *Conn) SetChannels(ctx context.Context, iface string, s Channels) error {
	return c.set(ctx, unix.ETHTOOL_MSG_CHANNELS_SET, unix.ETHTOOL_A_CHANNELS_HEADER, iface, channelsFields(&s))
}
