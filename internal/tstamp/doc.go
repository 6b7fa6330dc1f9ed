// Package tstamp is rig's only door to Linux socket and NIC timestamping
// (SO_TIMESTAMPING, the socket error queue, SIOCSHWTSTAMP, ETHTOOL_GET_TS_INFO
// and PTP hardware clocks). No other rig package imports golang.org/x/sys/unix
// for timestamping.
//
// # Clocks
//
// Every stamp is an int64 count of nanoseconds; 0 means "absent".
//
//   - SW stamps (ts[0] of SCM_TIMESTAMPING) are CLOCK_REALTIME, taken by the
//     kernel. Compare them with other SW stamps or with time.Now().UnixNano().
//   - HW stamps (ts[2]) are the raw time of the NIC's PTP hardware clock
//     (PHC), /dev/ptpN. They are comparable only with other stamps from the
//     same PHC. Use [PHC.Offset] to relate a PHC to CLOCK_REALTIME.
//
// Never compare either with Go's monotonic clock (time.Since, time.Time
// differences): it has an unrelated epoch and is slewed differently.
//
// # Pieces
//
//   - [EnableWith] / [Conn.EnableTimestamping]: ask a socket for stamps
//     and say what the kernel and the NIC grant ([Granted]). A socket never
//     changes the NIC: it asks for hardware stamps only as far as the
//     device's current config delivers them.
//   - [Device] (ETHTOOL_GET_TS_INFO, SIOCGHWTSTAMP, SIOCSHWTSTAMP) and
//     [HostDevice]: the seam between rig and a NIC driver; [ReadNIC] reads
//     a device's [NICState].
//   - [Decide]: the one rule for a NIC's timestamping config (keep, write,
//     leave an unreadable config alone, fall back to software, refuse),
//     used by rig run, the hand-run probes, nicctl and validation. The
//     write itself, journaled, is nicctl.PrepareTimestamping's.
//   - [RxProof], [TxProof], [HWProof]: a column is hardware only when the
//     first packets carried hardware stamps; Hardware mode fails fast
//     naming the missing stamp, Auto falls back and says so.
//   - [ParseRx] / [ParseErrqueue]: walk control messages in place, 0 allocs.
//   - [Conn] (UDP/IPv4, multicast) and [PacketConn] (AF_PACKET capture):
//     sockets with preallocated buffers whose per-packet methods do not
//     allocate and work both from a busy-spinning locked OS thread and from a
//     blocking poll loop.
//   - [Conn.DrainTx]: hands every transmit stamp of the error queue, keyed
//     by the sequence passed to SendTo, to the caller (sender, responder),
//     which files it under that sequence and bounds the wait itself;
//     [Conn.ReadTx] stops once the stamp the caller waits for is filed.
//   - [PHC] over a [PHCDevice]: PHC to CLOCK_REALTIME offset, PRECISE, else
//     EXTENDED, else basic.
//   - [Stamper]: a Device that emulates a NIC's stamping (driver profiles
//     in tests) lets the real loops see the hardware stamps that driver
//     would give.
//
// Control messages are parsed in the 64-bit layout (amd64, arm64): there
// SCM_TIMESTAMPING (37) and SCM_TIMESTAMPING_NEW (65) carry the same three
// {int64 sec, int64 nsec} pairs and both are accepted.
//
// Errors that mean "this kernel or device cannot do it" wrap
// errors.ErrUnsupported; a missing device or interface wraps os.ErrNotExist;
// a missing privilege wraps os.ErrPermission.
package tstamp
