package hostinfo

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"

	"github.com/rig-project/rig/internal/hostfs"
	"github.com/rig-project/rig/internal/rundir"
)

// TimestampOwners names the daemons that keep iface's hardware timestamping
// config (SIOCSHWTSTAMP) for themselves, one text each, e.g.
// "ptp4l (pid 812, -i ens1f0)". The kernel does not record who set a
// device's config; these are the programs known to set it and to expect it
// to stay:
//
//   - ptp4l, with the interface on its command line (-i IF, --interface IF,
//     -iIF) or as a [IF] section of its configuration file (-f FILE; how
//     timemaster and linuxptp-daemon start it);
//   - chronyd, with `hwtimestamp IF` or `hwtimestamp *` in its
//     configuration (-f FILE, else /etc/chrony/chrony.conf or
//     /etc/chrony.conf).
//
// A configuration file that cannot be read is named as such: the daemon
// may own the interface, and the caller must not assume it does not.
func TimestampOwners(fs hostfs.FS, iface string) ([]string, error) {
	ps, err := FindProcesses(fs, "ptp4l", "chronyd")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		if why := ownsBy(fs, p, iface); why != "" {
			out = append(out, fmt.Sprintf("%s (pid %d, %s)", p.Comm, p.PID, why))
		}
	}
	return out, nil
}

func ownsBy(fs hostfs.FS, p rundir.Process, iface string) string {
	args := p.Cmdline
	if len(args) > 0 {
		args = args[1:]
	}
	var conf string
	for i, a := range args {
		next := ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case p.Comm == "ptp4l" && (a == "-i" || a == "--interface") && next == iface:
			return a + " " + iface
		case p.Comm == "ptp4l" && (a == "-i"+iface || a == "--interface="+iface):
			return a
		case a == "-f" && next != "":
			conf = next
		case strings.HasPrefix(a, "-f") && len(a) > 2:
			conf = a[2:]
		}
	}
	switch p.Comm {
	case "ptp4l":
		if conf == "" {
			return ""
		}
		return confOwns(fs, conf, iface, ptp4lSections)
	case "chronyd":
		if conf != "" {
			return confOwns(fs, conf, iface, chronyHWTimestamp)
		}
		for _, c := range []string{"/etc/chrony/chrony.conf", "/etc/chrony.conf"} {
			if fs.Exists(c) {
				return confOwns(fs, c, iface, chronyHWTimestamp)
			}
		}
	}
	return ""
}

// confOwns reads a daemon's configuration file and asks match about it.
func confOwns(fs hostfs.FS, path, iface string, match func(line, iface string) bool) string {
	b, err := fs.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("configuration %s unreadable (%v): it may name %s", path, err, iface)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line != "" && match(line, iface) {
			return line + " in " + path
		}
	}
	return ""
}

// ptp4lSections matches a ptp4l configuration section naming iface.
func ptp4lSections(line, iface string) bool { return line == "["+iface+"]" }

// chronyHWTimestamp matches chrony's `hwtimestamp IF [options]` directive
// for iface or for every interface ("*").
func chronyHWTimestamp(line, iface string) bool {
	f := strings.Fields(line)
	return len(f) >= 2 && f[0] == "hwtimestamp" && (f[1] == iface || f[1] == "*")
}
