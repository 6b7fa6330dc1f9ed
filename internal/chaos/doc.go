// Package chaos is rig's fault matrix (`make chaos`): it runs `rig run`
// on the emulated topology and hurts it as a careless user or a bad day
// would — SIGINT, SIGTERM, SIGHUP and SIGKILL at several moments, killed
// agents and probes, a full disk, two runs at once, `rig nicctl` and
// `rig restore` during a run — and checks after each fault that the host
// is as it was (no journaled knob left changed, no journal pending, no
// rig process, stress-ng, lab, namespace or agent work directory left, the
// host lock free) and that rig said what happened.
//
// The matrix is one table in chaos_test.go: a row is a fault, what must
// happen, and a function that injects the fault and reports what did. It
// runs only when RIG_CHAOS=1 (make chaos sets it), as root, and prints the
// table: fault, expected, observed, held. RIG_CHAOS_BIN runs it against
// another rig binary (e.g. an older build, to see which rows it fails).
package chaos
