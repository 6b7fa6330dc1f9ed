package responder

import (
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/facts"
)

// TestIRQsStayOn: prefer-busy-poll keeps the interrupts off only with
// defer_hard_irqs > 0 and a timeout, irq_suspend_timeout or else
// gro_flush_timeout (net/core/dev.c busy_poll_stop); knobs it cannot read
// are "cannot tell", never fine.
func TestIRQsStayOn(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	for _, c := range []struct {
		k    facts.NAPIKnobs
		want string
	}{
		{facts.NAPIKnobs{DeferHardIRQs: u32(2), GROFlushTimeout: u64(200000)}, ""},
		{facts.NAPIKnobs{DeferHardIRQs: u32(2), GROFlushTimeout: u64(0), IRQSuspendTimeout: u64(20000000)}, ""},
		{facts.NAPIKnobs{DeferHardIRQs: u32(0), GROFlushTimeout: u64(200000)}, "napi_defer_hard_irqs 0 and gro_flush_timeout 200000 ns: prefer-busy-poll polls, but the kernel does not hold the interrupts off"},
		{facts.NAPIKnobs{DeferHardIRQs: u32(2), GROFlushTimeout: u64(0), IRQSuspendTimeout: u64(0)}, "rig nicctl set rig-no-such-if --napi-defer-hard-irqs 2 --gro-flush-timeout 200000"},
		// Not reported by napi-get and no sysfs files to read.
		{facts.NAPIKnobs{}, "cannot tell whether rig-no-such-if's interrupts are deferred"},
	} {
		got := irqsStayOn("rig-no-such-if", c.k)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.k, got, c.want)
		}
	}
}
