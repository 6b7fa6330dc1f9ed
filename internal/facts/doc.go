// Package facts reads what rig needs to know of a host, and changes
// nothing: the facts that validation and `rig run --dry-run` decide from
// (Facts), and the readers they are made of — a NIC's device, driver,
// IRQs, link, ENA facts, private flags, `ethtool -S` counters and
// timestamping state (NIC, Show), the management interfaces (ReadMgmt),
// its addresses (IPv4Addrs) and irqbalance's state (ReadIRQBalance).
//
// The packages that change a host (nicctl, hostctl) read through it; the
// ones that only read (check, envsnap, the scenario's validation) need
// none of them. All /proc and /sys access goes through hostfs, all ethtool
// access through ethtoolnl.Client, timestamping through tstamp.Device.
//
// The readers are Linux's (files built for linux only): elsewhere the
// package is Facts and AddrList, what a scenario's validation reads, so
// `rig run --dry-run`'s package builds on any OS.
package facts
