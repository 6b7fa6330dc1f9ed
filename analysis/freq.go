package analysis

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rig-project/rig/internal/rundir"
)

// The responder CPU's measured frequency and the responder host's RAPL
// energy, per round and per arm, from the "freq", "power" and "energy"
// sections of telemetry.json (rundir.FreqResult, rundir.PowerState and
// rundir.EnergyResult).

// FreqDiffPct is how far two arms' frequencies may differ before a
// comparison says that part of its difference may be frequency.
const FreqDiffPct = 3.0

// ArmFreq is the responder CPU's frequency over an arm's rounds.
type ArmFreq struct {
	// Source is the rounds' source ("APERF/MPERF", "scaling_cur_freq",
	// "not measurable here"), "mixed: …" when they differ.
	Source string      `json:"source"`
	Rounds []RoundFreq `json:"rounds"`
	// MedianMHz, MinMHz and MaxMHz are over the measured rounds (nil when
	// none was): the median (lower middle) of the rounds' averages.
	MedianMHz *float64 `json:"median_mhz"`
	MinMHz    *float64 `json:"min_mhz"`
	MaxMHz    *float64 `json:"max_mhz"`
	// RanUnder is the power state of the arm's first round: governor,
	// turbo, intel_pstate limits, EPP, tuned profile.
	RanUnder string `json:"ran_under,omitempty"`
	// Energy is each RAPL zone's energy per round, the median over the
	// rounds that could tell (nil when no round read RAPL); EnergyRounds
	// holds every round's reading.
	Energy       []ZoneEnergy  `json:"energy,omitempty"`
	EnergyRounds []RoundEnergy `json:"energy_rounds,omitempty"`
}

// ZoneEnergy is one RAPL zone over an arm's rounds.
type ZoneEnergy struct {
	Zone string `json:"zone"` // "package-0", "package-0 dram"
	// Rounds is how many rounds could tell, of Of that read RAPL.
	Rounds int `json:"rounds"`
	Of     int `json:"of"`
	// MedianJ and MedianW are the medians of the rounds' joules and
	// mean watts (nil when no round could tell).
	MedianJ *float64 `json:"median_joules"`
	MedianW *float64 `json:"median_watts"`
}

// RoundEnergy is one round's RAPL reading.
type RoundEnergy struct {
	Round  int                  `json:"round"`
	Energy *rundir.EnergyResult `json:"energy"`
}

// RoundFreq is one round's measurement.
type RoundFreq struct {
	Round   int      `json:"round"`
	Source  string   `json:"source"`
	MHz     *float64 `json:"mhz,omitempty"`
	BusyPct *float64 `json:"busy_pct,omitempty"`
	// Note: the rule and the TSC rate (APERF/MPERF), or why nothing was
	// measured.
	Note string `json:"note,omitempty"`
}

// readRoundFreq reads the frequency, power and energy sections of one
// round's telemetry.json; ok is false when the file is missing or carries
// no frequency (an older rig, or a responder that was not pinned).
func readRoundFreq(rd TelemetryRound) (rf RoundFreq, pw *rundir.PowerState, en *rundir.EnergyResult, ok bool) {
	k := rd.K
	b, err := rundir.ReadRegular(rd.TelemetryPath()) // a FIFO must not hang the report
	if errors.Is(err, os.ErrNotExist) {
		return rf, nil, nil, false
	}
	rf.Round = k
	if err != nil {
		rf.Source, rf.Note = rundir.FreqNone, err.Error()
		return rf, nil, nil, true
	}
	var v struct {
		Error  string               `json:"error"`
		Freq   *rundir.FreqResult   `json:"freq"`
		Power  *rundir.PowerState   `json:"power"`
		Energy *rundir.EnergyResult `json:"energy"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		rf.Source, rf.Note = rundir.FreqNone, "telemetry.json damaged: "+err.Error()
		return rf, nil, nil, true
	}
	switch {
	case v.Error != "":
		rf.Source, rf.Note = rundir.FreqNone, "telemetry could not run: "+v.Error
		return rf, nil, nil, true
	case v.Freq == nil:
		return rf, v.Power, v.Energy, false
	}
	f := v.Freq
	rf.Source, rf.Note = f.Source, f.Note
	if f.Source != rundir.FreqNone && f.MHz > 0 && !math.IsInf(f.MHz, 0) && !math.IsNaN(f.MHz) {
		rf.MHz = ptr(f.MHz)
		if f.BusyPct > 0 {
			rf.BusyPct = ptr(f.BusyPct)
		}
		switch {
		case f.Rule == rundir.RuleAPERFTSC:
			rf.Note = fmt.Sprintf("ΔAPERF/ΔMPERF × TSC %.0f MHz", f.TSCMHz)
		case f.Source == rundir.FreqAPERF: // an older rig's rule
			rf.Note = fmt.Sprintf("ΔAPERF/ΔMPERF × base %.0f MHz (%s)", f.BaseMHz, f.BaseFrom)
		}
	} else if f.Source != rundir.FreqNone {
		rf.Source, rf.Note = rundir.FreqNone, fmt.Sprintf("%s gave no value: %s", f.Source, f.Note)
	}
	return rf, v.Power, v.Energy, true
}

// armFreq gathers the rounds' measurements; nil when no round has one.
func armFreq(rounds []TelemetryRound) *ArmFreq {
	var af ArmFreq
	var mhz []float64
	var sources []string
	for _, rd := range rounds {
		rf, pw, en, ok := readRoundFreq(rd)
		if af.RanUnder == "" && pw != nil {
			af.RanUnder = describePower(pw)
		}
		if en != nil {
			af.EnergyRounds = append(af.EnergyRounds, RoundEnergy{Round: rd.K, Energy: en})
		}
		if !ok {
			continue
		}
		af.Rounds = append(af.Rounds, rf)
		if !slices.Contains(sources, rf.Source) {
			sources = append(sources, rf.Source)
		}
		if rf.MHz != nil {
			mhz = append(mhz, *rf.MHz)
		}
	}
	af.Energy = zoneEnergy(af.EnergyRounds)
	if len(af.Rounds) == 0 && len(af.EnergyRounds) == 0 {
		return nil
	}
	if len(sources) > 0 {
		af.Source = sources[0]
	}
	if len(sources) > 1 {
		af.Source = "mixed: " + strings.Join(sources, ", ")
	}
	if len(mhz) > 0 {
		af.MedianMHz = ptr(medianF(mhz))
		af.MinMHz, af.MaxMHz = ptr(slices.Min(mhz)), ptr(slices.Max(mhz))
	}
	return &af
}

// zoneEnergy is each zone's median joules and watts over the rounds that
// could tell, zones in the order the first round lists them.
func zoneEnergy(rounds []RoundEnergy) []ZoneEnergy {
	var out []ZoneEnergy
	j, w := map[string][]float64{}, map[string][]float64{}
	for _, re := range rounds {
		for _, z := range re.Energy.Zones {
			l := z.Label()
			k := slices.IndexFunc(out, func(e ZoneEnergy) bool { return e.Zone == l })
			if k < 0 {
				out, k = append(out, ZoneEnergy{Zone: l}), len(out)
			}
			out[k].Of++
			if z.CannotTell == "" && z.Seconds > 0 {
				out[k].Rounds++
				j[l], w[l] = append(j[l], z.Joules), append(w[l], z.Watts)
			}
		}
	}
	for k, z := range out {
		if len(j[z.Zone]) > 0 {
			out[k].MedianJ, out[k].MedianW = ptr(medianF(j[z.Zone])), ptr(medianF(w[z.Zone]))
		}
	}
	return out
}

// describePower is the power state in a few words.
func describePower(p *rundir.PowerState) string {
	var parts []string
	if f := p.Freq; f != nil {
		s := fmt.Sprintf("%s %s", f.Driver, f.Governor)
		if f.EPP != "" {
			s += ", EPP " + f.EPP
		}
		s += fmt.Sprintf(", limits %s–%s MHz", strconv.FormatInt(f.MinKHz/1000, 10), strconv.FormatInt(f.MaxKHz/1000, 10))
		parts = append(parts, s)
	} else {
		parts = append(parts, "no cpufreq")
	}
	if t := p.Turbo; t != nil {
		s := "turbo " + map[bool]string{true: "on", false: "off"}[t.Enabled]
		if strings.HasSuffix(t.Source, "no_turbo") {
			s += fmt.Sprintf(", perf %d–%d %%", t.MinPerfPct, t.MaxPerfPct)
		}
		parts = append(parts, s)
	}
	var off []string
	for _, s := range p.Idle {
		if n, ok := strings.CutSuffix(s, " (disabled)"); ok {
			off = append(off, n)
		}
	}
	if len(off) > 0 {
		parts = append(parts, "idle states off: "+strings.Join(off, " "))
	}
	switch {
	case strings.Contains(p.Tuned, "Current active profile: "):
		_, prof, _ := strings.Cut(p.Tuned, "Current active profile: ")
		prof, _, _ = strings.Cut(prof, "\n")
		parts = append(parts, "tuned "+strings.TrimSpace(prof))
	case p.Tuned != "":
		parts = append(parts, "tuned: "+strings.ReplaceAll(strings.TrimSpace(p.Tuned), "\n", " "))
	}
	return strings.Join(parts, "; ")
}

// freqNote says, for a comparison of arm against ref, that their CPUs ran
// at frequencies more than FreqDiffPct apart; "" otherwise (or when either
// side was not measured, or measured differently).
func freqNote(arm, ref *ArmFreq, refWord string) string {
	if arm == nil || ref == nil || arm.MedianMHz == nil || ref.MedianMHz == nil || *ref.MedianMHz <= 0 {
		return ""
	}
	if arm.Source != ref.Source {
		return fmt.Sprintf("CPU frequency measured differently (%s vs %s %s): not compared", arm.Source, refWord, ref.Source)
	}
	d := 100 * (*arm.MedianMHz - *ref.MedianMHz) / *ref.MedianMHz
	if math.Abs(d) <= FreqDiffPct {
		return ""
	}
	return fmt.Sprintf("the CPU ran at %.0f MHz vs %.0f MHz on the %s (%+.0f %%, %s): part of this difference may be frequency",
		*arm.MedianMHz, *ref.MedianMHz, refWord, d, arm.Source)
}

// annotateFreq puts the frequency note next to every comparison of an
// arm whose frequency differs from its reference's.
func annotateFreq(cs []Comparison, this, ref func(arm string) *ArmFreq, refWord string) {
	for i := range cs {
		cs[i].Frequency = freqNote(this(cs[i].Arm), ref(cs[i].Ref), refWord)
	}
}
