package journal

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestLookupDeviceLoopback(t *testing.T) {
	d, err := LookupDevice("lo")
	if err != nil {
		t.Fatal(err)
	}
	if d.Ifindex != 1 || d.Boot == "" {
		t.Errorf("lo: %+v, want ifindex 1 and a boot id", d)
	}
	if d.NetNSCookie == 0 {
		t.Log("no SO_NETNS_COOKIE here (kernel before 5.14, or an emulator)")
	}
	none, err := LookupDevice("rig-nosuch0")
	if err != nil || none.Ifindex != 0 || none.NetNSCookie != d.NetNSCookie {
		t.Errorf("missing device: %+v, %v", none, err)
	}
}

// fakeDevices replaces the device lookup for one test.
func fakeDevices(t *testing.T, devs map[string]Device) {
	old := identify
	identify = func(name string) (Device, error) {
		d, ok := devs[name]
		if !ok {
			return Device{Name: name, NetNSCookie: 7, Boot: "b1"}, nil
		}
		return d, nil
	}
	t.Cleanup(func() { identify = old })
}

// TestUndoRefusesOtherDevice: an entry made to one device is not undone
// on another that took its name (recreated namespace or NIC, or another
// namespace with a recycled inode); it stays open with an error that says
// what differs and what to do. The same device is undone.
func TestUndoRefusesOtherDevice(t *testing.T) {
	orig := Device{Name: "eth9", Ifindex: 5, MAC: "02:00:00:00:00:01", NetNSCookie: 7, Boot: "b1"}
	for _, c := range []struct {
		name string
		now  Device
		want string // "" = undone
	}{
		{"same device", orig, ""},
		{"recreated device", Device{Name: "eth9", Ifindex: 5, MAC: "02:00:00:00:00:02", NetNSCookie: 7, Boot: "b1"}, "not the same device"},
		{"other namespace, same inode", Device{Name: "eth9", Ifindex: 5, MAC: orig.MAC, NetNSCookie: 8, Boot: "b1"}, "another network namespace"},
		{"other boot", Device{Name: "eth9", Ifindex: 5, MAC: orig.MAC, NetNSCookie: 7, Boot: "b2"}, "another boot"},
		{"device gone", Device{Name: "eth9", NetNSCookie: 7, Boot: "b1"}, "not in this network namespace"},
	} {
		t.Run(c.name, func(t *testing.T) {
			devs := map[string]Device{"eth9": orig}
			fakeDevices(t, devs)
			dir := t.TempDir()
			value := "4"
			undone := 0
			h := Handlers{"fake": func(_ context.Context, e Entry) (string, error) { undone++; value = e.Previous; return value, nil }}
			j, err := Open(dir, h)
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			_, err = j.Apply(context.Background(), Change{Kind: "fake", Target: "eth9", Device: "eth9", Value: "2",
				Read:  func(context.Context) (string, error) { return value, nil },
				Write: func(_ context.Context, v string) error { value = v; return nil }})
			if err != nil {
				t.Fatal(err)
			}
			devs["eth9"] = c.now
			_, err = j.Undo(context.Background())
			open, perr := Pending(dir)
			if perr != nil {
				t.Fatal(perr)
			}
			if c.want == "" {
				if err != nil || undone != 1 || value != "4" || len(open) != 0 {
					t.Errorf("same device: err %v, undone %d, value %s, open %d", err, undone, value, len(open))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rig restore") {
				t.Errorf("undo on %+v: %v, want an error with %q and the fix", c.now, err, c.want)
			}
			if undone != 0 || value != "2" {
				t.Errorf("handler ran on another device: undone %d, value %s", undone, value)
			}
			if len(open) != 1 || open[0].Device == nil || open[0].Device.Ifindex != 5 {
				t.Errorf("entry not left open with its device: %+v", open)
			}
		})
	}
}

// TestOldJournalWithoutDevice: a journal written before devices were
// recorded still parses and undoes.
func TestOldJournalWithoutDevice(t *testing.T) {
	old := `{"seq":1,"op":"apply","kind":"ethtool-channels","target":"eth1","previous":"{\"combined\":4}","applied":"{\"combined\":2}","netns":"net:[4026531840]","time":"2026-01-01T00:00:00Z","pid":1}` + "\n"
	recs, err := Parse(bytes.NewReader([]byte(old)))
	if err != nil {
		t.Fatal(err)
	}
	es, err := Entries(recs)
	if err != nil || len(es) != 1 || es[0].Device != nil || !es[0].Open {
		t.Fatalf("entries %+v, %v", es, err)
	}
}
