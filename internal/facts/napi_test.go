//go:build linux

package facts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mdlayher/netlink"

	"github.com/rig-project/rig/internal/hostfs"
)

// TestReadNAPIKnobs: the sysfs files as net/core/net-sysfs.c prints them;
// a file that is not there (a kernel before it) leaves its field nil, one
// that cannot be parsed is an error (Show says "cannot tell").
func TestReadNAPIKnobs(t *testing.T) {
	root := t.TempDir()
	put := func(name, v string) {
		p := filepath.Join(root, "sys/class/net/eth9", name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fs := hostfs.FS{Root: root}
	put("operstate", "up\n")
	if k, err := ReadNAPIKnobs(fs, "eth9"); err != nil || k != (NAPIKnobs{}) {
		t.Fatalf("no files: %+v %v", k, err)
	}
	put("gro_flush_timeout", "200000\n")
	if k, err := ReadNAPIKnobs(fs, "eth9"); err != nil || k.DeferHardIRQs != nil || *k.GROFlushTimeout != 200000 {
		t.Fatalf("gro_flush_timeout only: %+v %v", k, err)
	}
	put("napi_defer_hard_irqs", "2\n")
	if k, err := ReadNAPIKnobs(fs, "eth9"); err != nil || *k.DeferHardIRQs != 2 {
		t.Fatalf("both: %+v %v", k, err)
	}
	put("napi_defer_hard_irqs", "x\n")
	if _, err := ReadNAPIKnobs(fs, "eth9"); err == nil || !strings.Contains(err.Error(), "/sys/class/net/eth9/napi_defer_hard_irqs") {
		t.Fatalf("garbage: %v", err)
	}
}

// napiReply encodes a napi-get reply as netdev_nl_napi_fill_one does
// (6.13: defer-hard-irqs u32, the timeouts as uint, 8 bytes when they
// do not fit in 4).
func napiReply(t testing.TB, id, ifindex uint32, big bool) []byte {
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(NetdevNAPIID, id)
	ae.Uint32(NetdevNAPIIface, ifindex)
	ae.Uint32(netdevNAPIDefer, 2)
	ae.Uint32(netdevNAPIGROFlush, 200000)
	if big {
		ae.Uint64(NetdevNAPIIRQSuspend, 1<<33)
	} else {
		ae.Uint32(NetdevNAPIIRQSuspend, 20000000)
	}
	b, err := ae.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeNAPI(t *testing.T) {
	for _, big := range []bool{false, true} {
		var x NAPI
		var ifi uint32
		if err := decodeNAPI(napiReply(t, 273, 5, big), &x, &ifi); err != nil {
			t.Fatal(err)
		}
		want := uint64(20000000)
		if big {
			want = 1 << 33
		}
		if x.ID != 273 || ifi != 5 || *x.DeferHardIRQs != 2 || *x.GROFlushTimeout != 200000 || *x.IRQSuspendTimeout != want {
			t.Fatalf("big %v: %+v ifindex %d", big, x, ifi)
		}
	}
	// A kernel before 6.13 sends neither knob: nil, not 0.
	ae := netlink.NewAttributeEncoder()
	ae.Uint32(NetdevNAPIID, 9)
	b, _ := ae.Encode()
	var x NAPI
	var ifi uint32
	if err := decodeNAPI(b, &x, &ifi); err != nil || x.IRQSuspendTimeout != nil || x.DeferHardIRQs != nil {
		t.Fatalf("old kernel: %+v %v", x, err)
	}
}

func FuzzDecodeNAPI(f *testing.F) {
	f.Add(napiReply(f, 273, 5, false))
	f.Add(napiReply(f, 1, 1, true))
	f.Fuzz(func(t *testing.T, b []byte) {
		var x NAPI
		var ifi uint32
		// A reply from the kernel, decoded without panicking whatever its
		// attributes' lengths; a uint knob is decoded only from 4 or 8 bytes.
		_ = decodeNAPI(b, &x, &ifi)
	})
}
