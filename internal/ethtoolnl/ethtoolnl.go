// Package ethtoolnl is a small ethtool generic-netlink client for the
// messages mdlayher/ethtool lacks: COALESCE, RINGS and CHANNELS (GET and
// SET) and TSINFO (GET).
//
// Optional values are pointers: a nil field was not reported by the driver
// (GET) or is left unchanged (SET). Errors are *Error; the kernel's extended
// ack text is in Error.Message and in its Error() string. A driver without
// the operation gives an error that matches errors.ErrUnsupported; an
// unknown interface one that matches os.ErrNotExist.
//
// The client (Conn, Dial) is Linux's; the types build everywhere, so a
// scenario file can hold a Coalesce.
package ethtoolnl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Coalesce is interrupt moderation (ethtool -c / -C).
type Coalesce struct {
	RxUsecs    *uint32 `json:"rx_usecs,omitempty"`
	RxFrames   *uint32 `json:"rx_frames,omitempty"`
	TxUsecs    *uint32 `json:"tx_usecs,omitempty"`
	TxFrames   *uint32 `json:"tx_frames,omitempty"`
	AdaptiveRx *bool   `json:"adaptive_rx,omitempty"`
	AdaptiveTx *bool   `json:"adaptive_tx,omitempty"`
}

// Rings is descriptor ring sizes (ethtool -g / -G). The maxima are GET only.
type Rings struct {
	RxMax *uint32 `json:"rx_max,omitempty"`
	TxMax *uint32 `json:"tx_max,omitempty"`
	Rx    *uint32 `json:"rx,omitempty"`
	Tx    *uint32 `json:"tx,omitempty"`
	// TX push (GET only, Linux ≥ 6.4): the driver writes descriptors and
	// the first TxPushBufLen bytes of each packet into device memory (ENA's
	// LLQ mode: 96 B, 224 B with large LLQ).
	TxPush          *bool   `json:"tx_push,omitempty"`
	TxPushBufLen    *uint32 `json:"tx_push_buf_len,omitempty"`
	TxPushBufLenMax *uint32 `json:"tx_push_buf_len_max,omitempty"`
}

// Channels is queue counts (ethtool -l / -L). The maxima are GET only.
type Channels struct {
	RxMax       *uint32 `json:"rx_max,omitempty"`
	TxMax       *uint32 `json:"tx_max,omitempty"`
	OtherMax    *uint32 `json:"other_max,omitempty"`
	CombinedMax *uint32 `json:"combined_max,omitempty"`
	Rx          *uint32 `json:"rx,omitempty"`
	Tx          *uint32 `json:"tx,omitempty"`
	Other       *uint32 `json:"other,omitempty"`
	Combined    *uint32 `json:"combined,omitempty"`
}

// Client is the ethtool netlink surface nicctl uses, so set/show logic can
// be tested without a kernel. *Conn is the real implementation.
type Client interface {
	Coalesce(ctx context.Context, iface string) (Coalesce, error)
	SetCoalesce(ctx context.Context, iface string, c Coalesce) error
	Rings(ctx context.Context, iface string) (Rings, error)
	SetRings(ctx context.Context, iface string, r Rings) error
	Channels(ctx context.Context, iface string) (Channels, error)
	SetChannels(ctx context.Context, iface string, c Channels) error
	Close() error
}

// Error is a failed ethtool netlink request.
type Error struct {
	Op      string // "COALESCE_SET"
	Iface   string
	Err     error  // the errno
	Message string // kernel extended ack, if any
}

func (e *Error) Error() string {
	var why string
	switch {
	case errors.Is(e.Err, syscall.EOPNOTSUPP):
		why = "not supported by this driver"
	case errors.Is(e.Err, syscall.ENODEV):
		why = "no such interface"
	case errors.Is(e.Err, syscall.EPERM):
		why = "operation not permitted (needs CAP_NET_ADMIN in the interface's network namespace)"
	default:
		why = e.Err.Error()
	}
	if e.Message != "" {
		why = e.Message + " (" + why + ")"
	}
	return fmt.Sprintf("ethtool %s %s: %s", e.Op, e.Iface, why)
}

// Unwrap exposes the errno plus errors.ErrUnsupported or os.ErrNotExist.
func (e *Error) Unwrap() []error {
	errs := []error{e.Err}
	if errors.Is(e.Err, syscall.EOPNOTSUPP) {
		errs = append(errs, errors.ErrUnsupported)
	}
	if errors.Is(e.Err, syscall.ENODEV) {
		errs = append(errs, os.ErrNotExist)
	}
	return errs
}
