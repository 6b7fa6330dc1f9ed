//go:build linux

package facts

import (
	"fmt"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/tstamp"
)

// TimestampOwner names who keeps iface's hardware timestamping config for
// itself (tstamp.NICState.Owner): the daemons hostinfo.TimestampOwners
// finds, "" for none, or — when fs's /proc does not show the host's PID
// namespace (hostinfo.HostPIDs), so a node's ptp4l would not be seen —
// tstamp.OwnerUnknown with why, so that rig neither writes the config nor
// takes TX stamps next to a daemon it cannot see.
func TimestampOwner(fs hostfs.FS, iface string) (string, error) {
	host, why, err := hostinfo.HostPIDs(fs)
	if err != nil {
		return "", fmt.Errorf("looking for ptp4l/chronyd: %w", err)
	}
	if !host {
		return tstamp.OwnerUnknown + " (no host PID namespace: " + why + ")", nil
	}
	owners, err := hostinfo.TimestampOwners(fs, iface)
	if err != nil {
		return "", fmt.Errorf("looking for ptp4l/chronyd: %w", err)
	}
	return strings.Join(owners, "; "), nil
}
