package hostinfo

import (
	"errors"
	"fmt"
	"os"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// ReadDMI reads the DMI identity. Only read errors other than a missing
// file are returned.
func ReadDMI(fs hostfs.FS) (rundir.DMI, error) {
	var d rundir.DMI
	for _, f := range []struct {
		name string
		v    *string
	}{{"sys_vendor", &d.SysVendor}, {"board_vendor", &d.BoardVendor}, {"product_name", &d.ProductName}} {
		s, err := fs.ReadString("/sys/class/dmi/id/" + f.name)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return d, err
		}
		*f.v = s
	}
	return d, nil
}

// IGMPVersion is the IGMP version the kernel speaks on iface: 1 or 2 when
// net.ipv4.conf.{all,IF}.force_igmp_version forces it (either one, the
// lower winning, as the kernel's IGMP_V1_SEEN/IGMP_V2_SEEN test them), 3
// otherwise (the default; the kernel may still fall back for a while
// after hearing an older querier). forced says which setting forced it.
func IGMPVersion(fs hostfs.FS, iface string) (version int, forced string, err error) {
	version = 3
	for _, c := range []string{"all", iface} {
		p := "/proc/sys/net/ipv4/conf/" + c + "/force_igmp_version"
		v, err := fs.ReadInt(p)
		if err != nil {
			return 0, "", fmt.Errorf("IGMP version of %s: %w", iface, err)
		}
		if (v == 1 || v == 2) && int(v) < version {
			version, forced = int(v), fmt.Sprintf("net.ipv4.conf.%s.force_igmp_version=%d", c, v)
		}
	}
	return version, forced, nil
}
