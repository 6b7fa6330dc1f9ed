package facts

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
)

// NAPIKnobs are the settings that let busy polling keep a NIC's
// interrupts off (Documentation/networking/napi.rst): nil fields are not
// set (a change) or not there (a reading). DeferHardIRQs and
// GROFlushTimeout are the device's sysfs files, IRQSuspendTimeout is per
// NAPI instance (netdev netlink napi-set, Linux 6.13+; no sysfs file).
type NAPIKnobs struct {
	DeferHardIRQs     *uint32 `json:"napi_defer_hard_irqs,omitempty"`
	GROFlushTimeout   *uint64 `json:"gro_flush_timeout_ns,omitempty"`
	IRQSuspendTimeout *uint64 `json:"irq_suspend_timeout_ns,omitempty"`
}

// MaxDeferHardIRQs is what the kernel takes for napi_defer_hard_irqs
// (S32_MAX; more is ERANGE).
const MaxDeferHardIRQs = 1<<31 - 1

// NAPIFile is the sysfs path of one of iface's NAPI files
// (napi_defer_hard_irqs, gro_flush_timeout).
func NAPIFile(iface, name string) string { return "/sys/class/net/" + iface + "/" + name }

// ReadNAPIKnobs reads iface's napi_defer_hard_irqs and gro_flush_timeout.
// A file that is not there leaves its field nil; one that cannot be read
// or parsed is an error.
func ReadNAPIKnobs(fs hostfs.FS, iface string) (NAPIKnobs, error) {
	var k NAPIKnobs
	d, err := readNAPIFile(fs, iface, "napi_defer_hard_irqs", 31)
	if d != nil {
		v := uint32(*d)
		k.DeferHardIRQs = &v
	}
	g, gerr := readNAPIFile(fs, iface, "gro_flush_timeout", 64)
	k.GROFlushTimeout = g
	return k, errors.Join(err, gerr)
}

func readNAPIFile(hfs hostfs.FS, iface, name string, bits int) (*uint64, error) {
	s, err := hfs.ReadString(NAPIFile(iface, name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, bits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", NAPIFile(iface, name), err)
	}
	return &v, nil
}
