package envsnap

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rig-project/rig/internal/ethtoolnl"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostfs"
)

type fakeRings struct {
	ethtoolnl.Client
	r ethtoolnl.Rings
}

func (f fakeRings) Rings(context.Context, string) (ethtoolnl.Rings, error) { return f.r, nil }
func (f fakeRings) Close() error                                           { return nil }
func (f fakeRings) Channels(context.Context, string) (ethtoolnl.Channels, error) {
	return ethtoolnl.Channels{}, errors.ErrUnsupported
}
func (f fakeRings) Coalesce(context.Context, string) (ethtoolnl.Coalesce, error) {
	return ethtoolnl.Coalesce{}, errors.ErrUnsupported
}

type fakeDrv struct{ facts.DeviceIoctl }

func (fakeDrv) DrvInfo(string) (facts.DrvInfo, error) {
	return facts.DrvInfo{Driver: "ena", Version: "2.15.0g"}, nil
}

// The snapshot of an AWS host records the ENA driver (version, out of
// tree), the LLQ mode and ENA Express, as facts reads them (fake c7i).
func TestSnapshotRecordsENA(t *testing.T) {
	defer func(f func(context.Context, hostfs.FS, string) (any, error)) { NICFacts = f }(NICFacts)
	on, hdr := true, uint32(224)
	NICFacts = func(ctx context.Context, fs hostfs.FS, iface string) (any, error) {
		env := &facts.NIC{FS: fs, Ioctl: fakeDrv{}, Link: func(string) (facts.Link, error) { return facts.Link{}, errors.ErrUnsupported }, DialEthtool: func() (ethtoolnl.Client, error) {
			return fakeRings{r: ethtoolnl.Rings{TxPush: &on, TxPushBufLen: &hdr}}, nil
		}, Stats: func(string) (map[string]uint64, error) { return map[string]uint64{"ena_srd_mode": 3}, nil }}
		return facts.Show(ctx, env, iface)
	}
	s := Take(context.Background(), fx("c7i"), Options{Getenv: noenv, Ifaces: []string{"ens5"}})
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ena":{"version":"2.15.0g","out_of_tree":true,"module_version":"2.15.0g"`, `"llq":"on","llq_header_bytes":224,"large_llq":true`,
		`"ena_srd_mode":3`, `"hw_packet_timestamping":{"tx_supported":false,"rx_supported":true`, `"carries_default_route":true`,
		`"dmi":{"sys_vendor":"Amazon EC2","board_vendor":"Amazon EC2","product_name":"c7i.2xlarge"}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("snapshot JSON lacks %s", want)
		}
	}
	var txt strings.Builder
	if err := s.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(txt.String(), "machine:         Amazon EC2 c7i.2xlarge\n") || !strings.Contains(txt.String(), "ena:       out-of-tree (amzn-drivers) 2.15.0g") || !strings.Contains(txt.String(), "ENA Express mode 3 (express true, udp true)") {
		t.Fatalf("rig env text:\n%s", txt.String())
	}
}
