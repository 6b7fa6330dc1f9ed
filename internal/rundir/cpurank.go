package rundir

// cpu-rank.json of a round: which CPU the responder was pinned to
// (responder.cpu: quietest) and the evidence (internal/cpurank ranks).

// Ranking is the outcome of cpurank.Rank: the candidates best first, with the
// evidence of each. It is the JSON of cpu-rank.json in a run directory.
type Ranking struct {
	Format string `json:"format"` // "rig-cpu-rank"
	// Candidates as ranked; From says where they came from.
	Candidates []int  `json:"candidates"`
	From       string `json:"from"`
	Chosen     int    `json:"chosen"`
	WindowNS   int64  `json:"window_ns"`
	StartNS    int64  `json:"start_ns"` // CLOCK_REALTIME of the host
	EndNS      int64  `json:"end_ns"`
	Scans      int    `json:"scans"`
	// RankerCPUs are the CPUs the measuring thread ran on (pinned outside
	// the candidates when it could be).
	RankerCPUs []int `json:"ranker_cpus"`
	// CtxSource and RunSource say how context switches and other
	// threads' run time were counted.
	CtxSource string      `json:"ctx_source"`
	RunSource string      `json:"run_source"`
	Rule      string      `json:"rule"`
	CPUs      []RankedCPU `json:"cpus"` // best first
	Notes     []string    `json:"notes,omitempty"`
}

// RankedCPU is one candidate's measurements over the window, per second.
type RankedCPU struct {
	CPU  int `json:"cpu"`
	Rank int `json:"rank"` // 1 = quietest
	// Cost is the rank cost (own + SMT siblings'), Own this CPU's alone,
	// both in µs per second.
	Cost     float64 `json:"cost_us_per_s"`
	Own      float64 `json:"own_us_per_s"`
	Siblings []int   `json:"smt_siblings,omitempty"`
	// Device interrupts (numbered /proc/interrupts rows: steerable),
	// other interrupts (LOC, RES, CAL, TLB, ...: not steerable), softirqs.
	IRQs     float64 `json:"irqs_per_s"`
	ArchIRQs float64 `json:"arch_irqs_per_s"`
	Softirqs float64 `json:"softirqs_per_s"`
	// CtxSwitches are timeslices begun there (context switches onto it).
	CtxSwitches float64 `json:"ctx_switches_per_s"`
	// RunUS is the run time of threads other than the ranker's, µs per s.
	RunUS float64 `json:"other_run_us_per_s"`
	// Runnable is the mean number of other threads seen runnable (state R)
	// there per scan (threads /proc shows).
	Runnable float64 `json:"runnable"`
	StealPct float64 `json:"steal_pct"`
	BusyPct  float64 `json:"busy_pct"` // every task's, the ranker's included
	// Top names the busiest interrupt rows and threads there.
	TopIRQs    []string `json:"top_irqs,omitempty"`
	TopThreads []string `json:"top_threads,omitempty"`
}

// RankingFormat is Ranking.Format.
const RankingFormat = "rig-cpu-rank"
