//go:build linux

package facts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// ENA is what the Amazon ENA driver tells about itself and one interface:
// which driver (in the kernel, or amzn-drivers built out of tree), its
// packet timestamping and PHC, the LLQ mode and ENA Express (SRD). Each
// field is empty where the driver does not report it; Errors says why a
// source could not be read.
type ENA struct {
	// Version is ethtool -i's: "2.15.0g" from amzn-drivers, the kernel
	// release from the in-tree driver (which has no version of its own).
	Version string `json:"version"`
	// OutOfTree is /sys/module/ena/taint holding O: amzn-drivers built
	// outside the kernel tree (DKMS or by hand).
	OutOfTree     bool   `json:"out_of_tree"`
	ModuleVersion string `json:"module_version,omitempty"` // /sys/module/ena/version (out-of-tree only)
	SrcVersion    string `json:"srcversion,omitempty"`
	// PHCEnable is the phc_enable module parameter (amzn-drivers built
	// with ENA_PHC_INCLUDE=1); nil when the driver has none.
	PHCEnable *bool `json:"phc_enable,omitempty"`
	// PHCErrorBoundNS is the device's PHC error bound, present only while
	// the PHC runs (amzn-drivers).
	PHCErrorBoundNS *uint64 `json:"phc_error_bound_ns,omitempty"`
	// HWTimestamping is hw_packet_timestamping_state (amzn-drivers ≥ 2.15.0).
	HWTimestamping *ENATimestamping `json:"hw_packet_timestamping,omitempty"`
	// LLQ is "on" (TX descriptors and headers pushed into device memory),
	// "off" (host memory), or "" when the kernel does not report TX push
	// (Linux < 6.4).
	LLQ string `json:"llq,omitempty"`
	// LLQHeaderBytes is the pushed header size: 96, 224 with large LLQ.
	LLQHeaderBytes *uint32 `json:"llq_header_bytes,omitempty"`
	// LargeLLQ is amzn-drivers' large_llq_header policy (sysfs).
	LargeLLQ *bool `json:"large_llq,omitempty"`
	// SRDMode is ethtool -S ena_srd_mode: bit 0 ENA Express on, bit 1 UDP
	// over SRD, bit 2 UDP ordering bypass; nil on instances without ENA
	// Express. SRD holds the other ena_srd_* counters.
	SRDMode *uint64           `json:"ena_srd_mode,omitempty"`
	SRD     map[string]uint64 `json:"ena_srd,omitempty"`
	Errors  map[string]string `json:"errors,omitempty"`
}

// ENATimestamping is the driver's packet timestamping state.
type ENATimestamping struct {
	TXSupported bool `json:"tx_supported"`
	RXSupported bool `json:"rx_supported"`
	TXEnabled   bool `json:"tx_enabled"`
	RXEnabled   bool `json:"rx_enabled"`
}

// ExpressOn reports ENA Express (SRD) on the interface.
func (e *ENA) ExpressOn() bool { return e.SRDMode != nil && *e.SRDMode&1 != 0 }

// UDPOverSRD reports ENA Express carrying UDP (the probes are UDP).
func (e *ENA) UDPOverSRD() bool { return e.SRDMode != nil && *e.SRDMode&2 != 0 }

// AtLeast reports whether Version is an amzn-drivers release ≥ major.minor.patch.
func (e *ENA) AtLeast(major, minor, patch int) bool {
	f := strings.SplitN(strings.TrimRight(e.Version, "gK"), ".", 3)
	if !e.OutOfTree || len(f) != 3 {
		return false
	}
	var v [3]int
	for i, s := range f {
		n, err := strconv.Atoi(s)
		if err != nil {
			return false
		}
		v[i] = n
	}
	return v[0] > major || v[0] == major && (v[1] > minor || v[1] == minor && v[2] >= patch)
}

// ReadENA reads the ENA facts of device d from sysfs, ethtool -i, the
// ethtool rings (TX push) and ethtool -S. It never fails: a source that
// cannot be read is named in Errors.
func ReadENA(ctx context.Context, env *NIC, d Device) *ENA {
	e := &ENA{Errors: map[string]string{}}
	fs := env.FS
	if v, err := env.ioctl().DrvInfo(d.Iface); err != nil {
		e.Errors["drvinfo"] = err.Error()
	} else {
		e.Version = v.Version
	}
	const mod = "/sys/module/ena/"
	taint, _ := fs.ReadString(mod + "taint")
	e.OutOfTree = strings.Contains(taint, "O")
	e.ModuleVersion, _ = fs.ReadString(mod + "version")
	e.SrcVersion, _ = fs.ReadString(mod + "srcversion")
	if e.Version == "" {
		e.Version = e.ModuleVersion
	}
	if v, err := fs.ReadString(mod + "parameters/phc_enable"); err == nil {
		b := v != "0" && v != "N"
		e.PHCEnable = &b
	}
	if d.Path != "" {
		if v, err := fs.ReadInt(d.Path + "/phc_error_bound"); err == nil && v >= 0 {
			u := uint64(v)
			e.PHCErrorBoundNS = &u
		}
		if v, err := fs.ReadString(d.Path + "/large_llq_header"); err == nil {
			b := v == "1"
			e.LargeLLQ = &b
		}
		if s, err := fs.ReadString(d.Path + "/hw_packet_timestamping_state"); err == nil {
			ts, err := parseENATimestamping(s)
			if err != nil {
				e.Errors["hw_packet_timestamping_state"] = err.Error()
			} else {
				e.HWTimestamping = &ts
			}
		}
	}
	if c, err := env.Ethtool(); err != nil {
		e.Errors["rings"] = err.Error()
	} else if r, err := c.Rings(ctx, d.Iface); err != nil {
		e.Errors["rings"] = err.Error()
	} else if r.TxPush != nil {
		e.LLQ = "off"
		if *r.TxPush {
			e.LLQ, e.LLQHeaderBytes = "on", r.TxPushBufLen
		}
	}
	stats := env.Stats
	if stats == nil {
		stats = ReadStats
	}
	if st, err := stats(d.Iface); err != nil {
		e.Errors["ethtool -S"] = err.Error()
	} else {
		for k, v := range st {
			switch {
			case k == "ena_srd_mode":
				m := v
				e.SRDMode = &m
			case strings.HasPrefix(k, "ena_srd_"):
				if e.SRD == nil {
					e.SRD = map[string]uint64{}
				}
				e.SRD[k] = v
			}
		}
	}
	if len(e.Errors) == 0 {
		e.Errors = nil
	}
	return e
}

// parseENATimestamping reads ena_sysfs.c's four "NAME: 0|1" lines.
func parseENATimestamping(s string) (ENATimestamping, error) {
	var t ENATimestamping
	fields := map[string]*bool{"HW TX support": &t.TXSupported, "HW RX support": &t.RXSupported,
		"TX configuration": &t.TXEnabled, "RX configuration": &t.RXEnabled}
	seen := map[string]bool{}
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		p := fields[strings.TrimSpace(k)]
		v = strings.TrimSpace(v)
		if p == nil || (v != "0" && v != "1") {
			return t, fmt.Errorf("hw_packet_timestamping_state: unexpected line %q", line)
		}
		*p = v == "1"
		seen[strings.TrimSpace(k)] = true
	}
	if len(seen) != len(fields) {
		return t, fmt.Errorf("hw_packet_timestamping_state: %d of %d lines", len(seen), len(fields))
	}
	return t, nil
}
