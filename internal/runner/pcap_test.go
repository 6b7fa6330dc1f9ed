package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
	"github.com/rig-project/rig/internal/testbin"
	"github.com/rig-project/rig/internal/wire"
)

// TestRunPcap runs one round with capture: {pcap: true} on the emulated
// topology and reads capture.pcap back: one frame per request and reply
// the capture filed, each stamped with its record's stamp in
// capture.samples (same clock, same ns), and report.json lists the file.
func TestRunPcap(t *testing.T) {
	testbin.Integration(t)
	res, log, err := runYAML(t, t.TempDir(), "pcap.yaml", `name: pcap
emulate: netns
traffic: {group: 239.66.0.3:7602, interval: 1ms, count: 200, warmup: 2}
timestamps: software
rounds: 1
capture: {pcap: true}
arms: [{name: a}]
`)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, log)
	}
	rd := rundir.RoundDir(res.Dir, "a", 0)
	cf, err := samples.ReadFile(filepath.Join(rd, samples.FileName(samples.RoleCapture)))
	if err != nil {
		t.Fatal(err)
	}
	stamp := map[[2]uint64]int64{} // (type, seq) → the record's stamp
	for _, r := range cf.Records {
		if v := r.T[samples.CapReqSW]; v != 0 {
			stamp[[2]uint64{uint64(wire.Request), r.Seq}] = v
		}
		if v := r.T[samples.CapRepSW]; v != 0 {
			stamp[[2]uint64{uint64(wire.Reply), r.Seq}] = v
		}
	}
	c := cf.Footer.Counters
	if c.Received < 2*190 || uint64(len(stamp)) != c.Received {
		t.Fatalf("capture filed %d frames (%d stamps in its records) of 200 requests and their replies", c.Received, len(stamp))
	}
	if p, _ := cf.Header.Settings["pcap"].(map[string]any); p["stamps"] != "cap_*_sw" {
		t.Errorf("capture header settings.pcap %v, want stamps cap_*_sw", cf.Header.Settings["pcap"])
	}
	f, err := os.Open(filepath.Join(rd, rundir.PcapFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if pr.LinkType() != layers.LinkTypeEthernet {
		t.Errorf("link type %v", pr.LinkType())
	}
	runID, err := wire.ParseRunID(cf.Header.RunID)
	if err != nil {
		t.Fatal(err)
	}
	seen, frames := map[[2]uint64]bool{}, uint64(0)
	for ; ; frames++ {
		data, ci, err := pr.ReadPacketData()
		if err != nil {
			break
		}
		p := gopacket.NewPacket(data, layers.LayerTypeEthernet, gopacket.Default)
		udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		var h wire.Header
		if udp == nil || wire.Decode(udp.Payload, runID, &h) != nil {
			t.Fatalf("frame %d is not this run's rig frame: % x", frames, data)
		}
		k := [2]uint64{uint64(h.Type), h.Seq}
		want, ok := stamp[k]
		switch {
		case !ok:
			t.Errorf("%v seq %d: in the pcap file, not in the capture's records", h.Type, h.Seq)
		case !seen[k] && ci.Timestamp.UnixNano() != want: // a duplicate has its own stamp
			t.Errorf("%v seq %d: pcap stamp %d, capture.samples %d", h.Type, h.Seq, ci.Timestamp.UnixNano(), want)
		}
		seen[k] = true
	}
	if uint64(len(seen)) != c.Received || frames != c.Received+c.Duplicated {
		t.Errorf("pcap holds %d frames of %d requests and replies; the capture filed %d and %d duplicates", frames, len(seen), c.Received, c.Duplicated)
	}
	t.Logf("%d frames in capture.pcap: %d requests and replies filed, %d duplicates", frames, c.Received, c.Duplicated)
	b, err := os.ReadFile(filepath.Join(res.Dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		PcapFiles []string `json:"pcap_files"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || !slices.Equal(rep.PcapFiles, []string{"arms/a/round-0/capture.pcap"}) {
		t.Errorf("report.json pcap_files %v (%v)", rep.PcapFiles, err)
	}
}
