package nicfake

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// PHCProfile is how a driver's PTP clock answers the clock ioctls
// (drivers/ptp/ptp_chardev.c dispatches them to the driver's
// ptp_clock_info callbacks).
type PHCProfile struct {
	// Cross: the driver has getcrosststamp, so PTP_CLOCK_GETCAPS reports
	// cross_timestamping and PTP_SYS_OFFSET_PRECISE works; otherwise
	// PRECISE is EOPNOTSUPP.
	Cross bool
	// Extended: the driver has gettimex64; without it
	// PTP_SYS_OFFSET_EXTENDED is EOPNOTSUPP and PTP_SYS_OFFSET reads
	// gettime64.
	Extended bool
	// PerSecond > 0 limits device reads (each sample of an EXTENDED or basic
	// ioctl is one) to that many in any second; a read over the limit fails
	// with EBUSY and blocks the clock for Block, during which every read
	// fails with EBUSY (ENA: ena_com_phc_get_timestamp).
	PerSecond int
	Block     time.Duration
	// Counters names the driver's counters of those reads, in the order
	// ok, expired, skipped, error (ENA: phc_cnt, phc_exp, phc_skp,
	// phc_err_ts); empty when it has none.
	Counters [4]string
}

// PHC plays a NIC's /dev/ptpN (tstamp.PHCDevice): PHC time is
// CLOCK_REALTIME + PHCOffset.
type PHC struct {
	n *NIC
	p *PHCProfile

	mu       sync.Mutex
	now      func() int64 // CLOCK_REALTIME in ns
	reads    []int64      // device reads in the last second (ns, CLOCK_REALTIME)
	blocked  int64        // end of the block period, 0 when not blocked
	failed   bool         // the read that started the block failed on the limit
	requests int          // every ioctl
}

func newPHC(n *NIC, p *PHCProfile) *PHC {
	return &PHC{n: n, p: p, now: func() int64 { return time.Now().UnixNano() }}
}

// SetClock makes the clock read CLOCK_REALTIME from now (a test's manual
// clock, so that rate limits do not depend on how fast the test runs).
func (c *PHC) SetClock(now func() int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// Requests counts the clock ioctls received.
func (c *PHC) Requests() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests
}

// CrossTimestamping is PTP_CLOCK_GETCAPS2's cross_timestamping.
func (c *PHC) CrossTimestamping() (bool, error) {
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	return c.p.Cross, nil
}

// Precise is PTP_SYS_OFFSET_PRECISE2.
func (c *PHC) Precise() (int64, int64, error) {
	c.mu.Lock()
	c.requests++
	c.mu.Unlock()
	if !c.p.Cross {
		return 0, 0, unix.EOPNOTSUPP
	}
	c.mu.Lock()
	sys := c.now()
	c.mu.Unlock()
	return sys + PHCOffset, sys, nil
}

// Extended is PTP_SYS_OFFSET_EXTENDED2: n gettimex64 reads; the first that
// fails fails the ioctl.
func (c *PHC) Extended(n int, out *[unix.PTP_MAX_SAMPLES][3]int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	if !c.p.Extended {
		return unix.EOPNOTSUPP
	}
	if n < 1 || n > unix.PTP_MAX_SAMPLES {
		return unix.EINVAL
	}
	for i := 0; i < n; i++ {
		before := c.now()
		if err := c.readLocked(before); err != nil {
			return err
		}
		after := c.now()
		out[i] = [3]int64{before, before + (after-before)/2 + PHCOffset, after}
	}
	return nil
}

// Basic is PTP_SYS_OFFSET2: alternating system and device reads.
func (c *PHC) Basic(n int, out *[2*unix.PTP_MAX_SAMPLES + 1]int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	if n < 1 || n > unix.PTP_MAX_SAMPLES {
		return unix.EINVAL
	}
	for i := 0; i < n; i++ {
		out[2*i] = c.now()
		if err := c.readLocked(out[2*i]); err != nil {
			return err
		}
		out[2*i+1] = c.now() + PHCOffset
	}
	out[2*n] = c.now()
	return nil
}

// readLocked is one device read at now: ENA's ena_com_phc_get_timestamp
// with its request limit and block period, and its counters.
func (c *PHC) readLocked(now int64) error {
	if c.p.PerSecond <= 0 {
		return nil
	}
	ok, _, skp, errc := c.p.Counters[0], c.p.Counters[1], c.p.Counters[2], c.p.Counters[3]
	if c.blocked != 0 {
		if now < c.blocked {
			c.n.AddCounter(skp, 1)
			return unix.EBUSY
		}
		// Leaving the block: the failed request is counted now.
		if c.failed {
			c.n.AddCounter(errc, 1)
		}
		c.blocked, c.failed = 0, false
	}
	keep := c.reads[:0]
	for _, t := range c.reads {
		if now-t < int64(time.Second) {
			keep = append(keep, t)
		}
	}
	c.reads = keep
	if len(c.reads) >= c.p.PerSecond {
		c.blocked, c.failed = now+int64(c.p.Block), true
		return unix.EBUSY
	}
	c.reads = append(c.reads, now)
	c.n.AddCounter(ok, 1)
	return nil
}
