package probe

import (
	"flag"
	"fmt"
	"time"

	"github.com/rig-project/rig/internal/cpusched"
)

// Noise is rig noise's command line, without where the result goes
// (--format, --out): the noise probe is no request-stream probe, but rig
// run starts it through the agent as one (an arm's noise window).
type Noise struct {
	CPU   int            // --cpu: the CPU to measure (-1: not given)
	For   time.Duration  // --for
	Sched cpusched.Sched // --sched: the loop's policy
}

// DefaultNoise is rig noise's command line with every flag at its default.
func DefaultNoise() Noise { return Noise{CPU: -1, For: 5 * time.Second} }

// Register defines rig noise's flags on fs, bound to n and set to their
// defaults.
func (n *Noise) Register(fs *flag.FlagSet) {
	d := DefaultNoise()
	fs.IntVar(&n.CPU, "cpu", d.CPU, "the `CPU` to measure (required)")
	fs.DurationVar(&n.For, "for", d.For, "how long the loop runs")
	fs.TextVar(&n.Sched, "sched", d.Sched, "scheduling policy of the loop: other | fifo:N (needs CAP_SYS_NICE)")
}

// Parse completes n after fs.Parse (nothing is derived) and checks it.
func (n *Noise) Parse(*flag.FlagSet) error { return n.Check() }

// Check checks n; every error is bad input.
func (n Noise) Check() error {
	switch {
	case n.CPU < 0:
		return fmt.Errorf("--cpu is required: the CPU to measure (rig check --rank-cpus finds the quietest)")
	case n.For < time.Millisecond || n.For > 24*time.Hour:
		return fmt.Errorf("--for %v: want 1ms to 24h", n.For)
	}
	return nil
}

// Args is n as rig noise's arguments (without the command name).
func (n Noise) Args() []string { return args(n, (*Noise).Register) }
