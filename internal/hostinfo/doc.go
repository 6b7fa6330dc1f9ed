// Package hostinfo parses the /proc and /sys files that say what a CPU is
// doing and how it is configured: /proc/interrupts, /proc/softirqs,
// /proc/stat and /proc/schedstat (with Busy, the one rule for how busy a
// CPU was), cpuidle states, cpufreq and turbo (intel_pstate, boost,
// CPPC), topology, isolation, the kernel command line, clocksource, THP,
// cgroup limits and per-thread stat/status; and, through the msr driver,
// the APERF/MPERF frequency counters and the TSC. The values a run
// directory records (Freq, Turbo, Cmdline, Cgroup, CPUBusy, …) are
// internal/rundir's types, which read no host.
//
// Every read goes through hostfs.FS so tests run on fake trees. Parsers take
// bytes and never panic on malformed input (they are fuzzed); they return an
// error naming the file and line. A file the kernel does not provide is
// reported as an error wrapping os.ErrNotExist.
//
// Two kinds of parser live here: the snapshot parsers (ParseCounterTable,
// ReadIdleStates, ...) that allocate freely, and the allocation-free readers
// (CounterReader, ParseUint, ParseThreadCtx, ParseSoftnetInto, File.ReadAll)
// that the telemetry sampler calls on every sample into preallocated memory.
package hostinfo
