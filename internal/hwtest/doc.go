// Package hwtest holds the tests that run rig's whole hardware-timestamping
// path — nicctl.PrepareTimestamping through a journal, a real round of
// responder, capture and sender on a netlab topology, the analysis labels,
// and the journal's undo — against the driver profiles of
// internal/nicfake. It has no code of its own: the tests live here because
// they import sender, responder, capture, nicctl and analysis together.
package hwtest
