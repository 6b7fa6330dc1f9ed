package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rig-project/rig/internal/probe"
)

// RateResult is the rate test: rig at a short interval, and sockperf's
// maximum ping-pong rate on the same path for reference.
type RateResult struct {
	Interval   time.Duration
	Duration   time.Duration
	Poll       string
	Sent       uint64
	Received   uint64
	Lost       uint64
	Duplicated uint64
	TxMissing  uint64
	SendErrors uint64
	Lateness   Summary
	// SockperfRate is the received messages/s of `sockperf ping-pong
	// --mps=max` with --nonblocked on both ends; SockperfRTT its RTTs.
	SockperfRate float64
	SockperfRTT  Summary
}

// TxPairedPct is the share of sent requests that got their TX stamp.
func (r *RateResult) TxPairedPct() float64 {
	if r.Sent == 0 {
		return 0
	}
	return 100 * float64(r.Sent-min(r.TxMissing, r.Sent)) / float64(r.Sent)
}

// OfferedRate is the configured request rate (requests/s).
func (r *RateResult) OfferedRate() float64 { return float64(time.Second) / float64(r.Interval) }

func (b *runner) rate(ctx context.Context) error {
	cfg := b.cfg
	count := int(cfg.RateTime / cfg.RateInterval)
	fmt.Fprintf(cfg.Log, "bench: rate: rig %d requests at %v (%s responder)\n", count, cfg.RateInterval, cfg.RatePoll)
	f, err := b.rigRound(ctx, filepath.Join(cfg.Dir, "rate", "rig"), cfg.RatePoll, "software", probe.EngineGo, probe.DefaultSend().Spin, 0, cfg.RateInterval, count, 0)
	if err != nil {
		return err
	}
	if f.Footer == nil {
		return fmt.Errorf("rate: rig sender file has no footer (truncated)")
	}
	c := f.Footer.Counters
	g, err := rigFigures(f)
	if err != nil {
		return fmt.Errorf("rate: rig sender file: %w", err)
	}
	r := &RateResult{Interval: cfg.RateInterval, Duration: cfg.RateTime, Poll: cfg.RatePoll,
		Sent: c.Sent, Received: c.Received, Lost: c.Lost, Duplicated: c.Duplicated,
		TxMissing: c.TxStampsMissing, SendErrors: c.SendErrors, Lateness: summarize(g.late)}
	fmt.Fprintf(cfg.Log, "bench: rate: sockperf --mps=max for %v\n", cfg.MaxRateTime)
	sp, err := b.sockperf(ctx, filepath.Join(cfg.Dir, "rate", "sockperf-max"), true, "max", cfg.MaxRateTime)
	if err != nil {
		return err
	}
	r.SockperfRate, r.SockperfRTT = sp.Rate(), summarize(sp.RTTs)
	b.res.Rate = r
	return nil
}
