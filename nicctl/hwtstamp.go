package nicctl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rig-project/rig/internal/cli"
	"github.com/rig-project/rig/internal/facts"
	"github.com/rig-project/rig/internal/hostinfo"
	"github.com/rig-project/rig/internal/journal"
	"github.com/rig-project/rig/internal/tstamp"
)

// TSRequest is what a caller wants of a NIC's hardware timestamping.
type TSRequest struct {
	Mode tstamp.Mode
	Need tstamp.Need
	// AllowMgmt lets rig change the interface that carries the default
	// route; TakeOver lets it change a config a daemon owns (ptp4l,
	// chronyd).
	AllowMgmt, TakeOver bool
}

// TSResult is what PrepareTimestamping found and did.
type TSResult struct {
	// State is the NIC before anything changed.
	State    tstamp.NICState `json:"state"`
	Decision tstamp.Decision `json:"decision"`
	// Changed is true when a journaled write is in force: it is put back
	// with the journal (Undo/UndoAfter, or `rig restore`).
	Changed bool `json:"changed"`
	// Granted is the config read back after a write.
	Granted *tstamp.HWTstampConfig `json:"granted,omitempty"`
	// Link says whether the write bounced the link and how long it took to
	// come back ("" when it did not bounce).
	Link string `json:"link,omitempty"`
}

// String is the one-line report for logs, plans and manifests.
func (r TSResult) String() string {
	s := "timestamping " + r.State.Ifname + ": " + r.Decision.Action.String() + ": "
	if r.Granted != nil {
		s += "granted " + r.Granted.String() + " (journaled, put back at the end)"
	} else {
		s += r.Decision.Why
	}
	if r.Decision.Fix != "" && r.Decision.Action == tstamp.ActUnknown {
		s += " (" + r.Decision.Fix + ")"
	}
	if r.Link != "" {
		s += "; " + r.Link
	}
	for _, n := range r.State.Notes {
		s += "; " + n
	}
	return s
}

// Hardware reports whether hardware stamps are expected after the
// preparation (to be proven by the first packets).
func (r TSResult) Hardware() bool { return r.Decision.Hardware() }

// PlanTimestamping is PrepareTimestamping without the change: what it
// would do (for --dry-run and validation).
func PlanTimestamping(env *Env, iface string, req TSRequest) (TSResult, error) {
	st, err := env.Timestamping(iface)
	if err != nil {
		return TSResult{State: st}, err
	}
	return TSResult{State: st, Decision: tstamp.Decide(st, tstamp.Policy{Mode: req.Mode, Need: req.Need, AllowMgmt: req.AllowMgmt, TakeOver: req.TakeOver})}, nil
}

// ErrTimestamping is wrapped by PrepareTimestamping's refusals: hardware
// stamps were demanded and this NIC cannot or may not give them. They also
// wrap errors.ErrUnsupported.
var ErrTimestamping = cli.Usage(errors.New("hardware timestamps not available"))

// refusal is a timestamping refusal: its text says why and how to fix it;
// it matches ErrTimestamping and errors.ErrUnsupported without printing
// them.
type refusal struct{ msg string }

func (r *refusal) Error() string   { return r.msg }
func (r *refusal) Unwrap() []error { return []error{ErrTimestamping, errors.ErrUnsupported} }

func refuse(format string, a ...any) error { return &refusal{fmt.Sprintf(format, a...)} }

// PrepareTimestamping is the one owner of a NIC's timestamping config: rig
// run calls it once per run and interface, the hand-run probes once at
// start, `rig nicctl set --hwtstamp all|rx` when asked. It reads the state,
// decides with tstamp.Decide, and writes only when what is needed is not
// already granted and the write is allowed. The write goes through j (put
// back by j's undo or `rig restore`); a driver that grants less than was
// asked (NONE, a PTP filter) is put back at once, and then Hardware mode
// fails and Auto mode settles for software, as it does when the driver
// refuses the write (ERANGE, EOPNOTSUPP, EINVAL: errors.ErrUnsupported),
// the reason in Decision.Why. After a write, failed or not, the link is
// waited for (some drivers, ENA among them, reset the interface on every
// SIOCSHWTSTAMP), bounded by env.LinkTimeout, plus env.LinkSettle when it
// bounced.
//
// Errors: a refusal wraps ErrTimestamping and errors.ErrUnsupported and
// says why and how to fix it; a missing interface wraps os.ErrNotExist; a
// missing privilege os.ErrPermission.
func PrepareTimestamping(ctx context.Context, env *Env, j *journal.Journal, iface string, req TSRequest) (TSResult, error) {
	res, err := PlanTimestamping(env, iface, req)
	if err != nil {
		return res, err
	}
	d := res.Decision
	switch d.Action {
	case tstamp.ActRefuse:
		return res, refuse("hardware timestamps: %s; fix: %s", d.Why, d.Fix)
	case tstamp.ActWrite:
	default:
		return res, nil
	}
	granted, link, changed, err := writeTimestamping(ctx, env, j, iface, d.Target)
	res.Link = link
	if err != nil && req.Mode == tstamp.Auto && errors.Is(err, errors.ErrUnsupported) {
		// The capabilities listed the mode, yet the driver or the device
		// refused it (a macvlan outside the initial netns, ENA's admin
		// command): settle for software, saying so.
		why := fmt.Sprintf("%s's driver refused %s although its capabilities list it (%v)", iface, d.Target, err)
		if changed {
			if _, uerr := j.UndoAfter(context.WithoutCancel(ctx), j.Mark()-1); uerr != nil {
				return res, fmt.Errorf("%s; putting it back failed: %w (run `rig restore`)", why, uerr)
			}
			why += " (put back)"
		}
		res.Decision.Action, res.Decision.RX, res.Decision.TX = tstamp.ActSoftware, false, false
		res.Decision.Why = why + ": software stamps"
		return res, nil
	}
	if err != nil {
		return res, err
	}
	res.Changed, res.Granted = true, &granted
	if req.Need.Granted(d.Target, granted) {
		return res, nil
	}
	// Less than asked: put it back now, then refuse or settle.
	why := fmt.Sprintf("%s: asked for %s, the driver granted %s, which does not stamp rig's probes", iface, d.Target, granted)
	if _, uerr := j.UndoAfter(context.WithoutCancel(ctx), j.Mark()-1); uerr != nil {
		return res, fmt.Errorf("%s; putting it back failed: %w (run `rig restore`)", why, uerr)
	}
	res.Changed, res.Granted = false, nil
	res.Decision.RX, res.Decision.TX = false, false
	if req.Mode == tstamp.Hardware {
		res.Decision.Action, res.Decision.Why = tstamp.ActRefuse, why+" (put back)"
		return res, refuse("hardware timestamps: %s (put back)", why)
	}
	res.Decision.Action, res.Decision.Why = tstamp.ActSoftware, why+" (put back): software stamps"
	return res, nil
}

// writeTimestamping journals and makes one SIOCSHWTSTAMP, then waits for
// the link. It returns the config read back, and whether a journaled
// change is in force (a failed write can leave one).
func writeTimestamping(ctx context.Context, env *Env, j *journal.Journal, iface string, want tstamp.HWTstampConfig) (tstamp.HWTstampConfig, string, bool, error) {
	val, err := json.Marshal(want)
	if err != nil {
		return want, "", false, err
	}
	before := env.linkSnapshot(iface)
	aff := env.queueAffinity(iface)
	r, err := j.Apply(ctx, hwtstampChange(env.TSDevice(), iface, string(val)))
	// Whether or not the config changed: a write that fails after the
	// driver reset the interface (ENA) leaves the config as it was and a
	// link that bounced.
	l, werr := env.waitLink(ctx, iface, before)
	link, err := l, errors.Join(err, werr)
	if l != "" && werr == nil {
		link += env.keepAffinity(iface, aff)
	}
	if err != nil {
		return want, link, r.Changed, err
	}
	var got tstamp.HWTstampConfig
	if err := json.Unmarshal([]byte(r.Effective), &got); err != nil {
		return want, link, r.Changed, fmt.Errorf("reading back %s's timestamping config: %w", iface, err)
	}
	return got, link, r.Changed, nil
}

// hwtstampChange journals a SIOCSHWTSTAMP. Values are the JSON of
// tstamp.HWTstampConfig ({"tx_type":1,"rx_filter":1}), the shape journals
// of earlier rig versions hold too.
func hwtstampChange(dev tstamp.Device, iface, value string) journal.Change {
	return journal.Change{
		Kind: KindHWTstamp, Target: iface, Device: iface, Value: value,
		Read: func(context.Context) (string, error) {
			c, err := dev.GetHWTstamp(iface)
			if err != nil {
				return "", fmt.Errorf("SIOCGHWTSTAMP %s: %w", iface, err)
			}
			b, err := json.Marshal(c)
			return string(b), err
		},
		Write: func(_ context.Context, v string) error {
			var c tstamp.HWTstampConfig
			if err := json.Unmarshal([]byte(v), &c); err != nil {
				return fmt.Errorf("journal value for %s %s: %w", KindHWTstamp, iface, err)
			}
			if err := dev.SetHWTstamp(iface, &c); err != nil {
				return tstamp.ClassifySetErr(iface, c, err)
			}
			return nil
		},
	}
}

// queueAffinity records the affinity of iface's queue IRQs by IRQ name.
// A reset that only frees and requests the IRQs again (ENA's close/up on
// every SIOCSHWTSTAMP) keeps an affinity a user wrote; one that frees the
// MSI-X vectors too (a device reset, some drivers' ring or channel
// changes) brings them back with the default affinity, possibly under
// other numbers. nil when they cannot be read (a virtual device without
// IRQs, a fake tree without /proc/interrupts).
func (e *Env) queueAffinity(iface string) map[string]string {
	d, err := facts.FindDevice(e.FS, iface)
	if err != nil {
		return nil
	}
	ints, err := hostinfo.ReadInterrupts(e.FS)
	if err != nil {
		return nil
	}
	irqs, err := facts.DiscoverIRQs(e.FS, d, ints)
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for _, q := range irqs {
		if q.IsQueue() && q.Name != "" && !q.Managed {
			m[q.Name] = strings.TrimSpace(q.Affinity)
		}
	}
	return m
}

// keepAffinity puts back, after a reset, the affinity each queue IRQ had
// before it (matched by name), so that the change of timestamping, or its
// undo, leaves the host's IRQ placement as it was. It says what it did
// ("" when nothing moved).
func (e *Env) keepAffinity(iface string, before map[string]string) string {
	if len(before) == 0 {
		return ""
	}
	now := e.queueAffinity(iface)
	var fixed, failed []string
	d, _ := facts.FindDevice(e.FS, iface)
	ints, _ := hostinfo.ReadInterrupts(e.FS)
	irqs, _ := facts.DiscoverIRQs(e.FS, d, ints)
	for _, q := range irqs {
		want, ok := before[q.Name]
		if !ok || now[q.Name] == want {
			continue
		}
		if err := e.files().WriteFile(facts.IRQFile(q.Number, "smp_affinity_list"), want); err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", q.Name, err))
			continue
		}
		fixed = append(fixed, q.Name)
	}
	out := ""
	if len(fixed) > 0 {
		out += fmt.Sprintf("; the reset moved %d queue IRQs, their affinity was put back (%s)", len(fixed), strings.Join(fixed, ", "))
	}
	if len(failed) > 0 {
		out += "; WARNING: affinity not put back for " + strings.Join(failed, ", ")
	}
	return out
}

// linkSnap is an interface's link state, read before and after a change
// that may reset it.
type linkSnap struct {
	carrierChanges int64
	ok             bool // carrier_changes could be read
	oper           string
	up             bool // operstate is up (or unknown)
	carrier        int64
	carrierOK      bool // carrier could be read
}

func (e *Env) linkSnapshot(iface string) linkSnap {
	base := "/sys/class/net/" + iface + "/"
	n, err := e.FS.ReadInt(base + "carrier_changes")
	st, _ := e.FS.ReadString(base + "operstate")
	c, cerr := e.FS.ReadInt(base + "carrier")
	return linkSnap{carrierChanges: n, ok: err == nil, oper: st, up: operUp(st), carrier: c, carrierOK: cerr == nil}
}

// ready reports whether the link carries traffic again after a change
// that started from before: the carrier is on (netif_carrier_ok, set
// synchronously by the driver) after an even number of carrier changes
// (an odd one means it went down and is not back), and operstate says up.
// operstate alone is not enough: linkwatch writes it, and a carrier-off is
// not urgent, so it can read up for a second after the carrier went down;
// it is needed too, because linkwatch is also what gives the device its
// qdisc back after a carrier-on.
func (s linkSnap) ready(before linkSnap) bool {
	even := !s.ok || !before.ok || (s.carrierChanges-before.carrierChanges)%2 == 0
	return s.up && even && (!s.carrierOK || s.carrier == 1)
}

// operUp reports an operstate a link can carry traffic in ("unknown" is
// what virtual devices without carrier report).
func operUp(st string) bool { return st == "up" || st == "unknown" }

// Default link waits after a change that can reset the interface.
const (
	DefaultLinkTimeout = 15 * time.Second
	DefaultLinkSettle  = time.Second
)

// Clock is the time the link wait reads and sleeps on.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

type wallClock struct{}

func (wallClock) Now() time.Time { return time.Now() }
func (wallClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (e *Env) clock() Clock {
	if e.Clock != nil {
		return e.Clock
	}
	return wallClock{}
}

// waitLink waits, after a change, until iface's link is ready again
// (linkSnap.ready), bounded by LinkTimeout. When the carrier went down
// meanwhile (carrier_changes moved: the driver reset the interface), it
// waits LinkSettle more, so that multicast joins and the first requests do
// not land while the NIC and the switch port still renegotiate. It says
// what happened ("" when the link never bounced and was up). A link that
// was down before the change is not waited for.
func (e *Env) waitLink(ctx context.Context, iface string, before linkSnap) (string, error) {
	if !before.up {
		return "", nil // it was down before the change: not the change's doing
	}
	timeout, settle := e.LinkTimeout, e.LinkSettle
	if timeout <= 0 {
		timeout = DefaultLinkTimeout
	}
	if settle < 0 {
		settle = 0
	} else if settle == 0 {
		settle = DefaultLinkSettle
	}
	clk := e.clock()
	start := clk.Now()
	base := "/sys/class/net/" + iface + "/"
	var after linkSnap
	for {
		if _, err := e.FS.ReadString(base + "operstate"); err != nil {
			return "", fmt.Errorf("waiting for %s's link: %w", iface, err) // the interface is gone
		}
		if after = e.linkSnapshot(iface); after.ready(before) {
			break
		}
		if clk.Now().Sub(start) >= timeout {
			return "", fmt.Errorf("%s's link did not come back up within %v after the change (%s): check the cable/switch port, then `rig restore`", iface, timeout, after.describe(before))
		}
		if err := clk.Sleep(ctx, 20*time.Millisecond); err != nil {
			return "", err
		}
	}
	up := clk.Now().Sub(start)
	if !before.ok || !after.ok || after.carrierChanges == before.carrierChanges {
		if up < 20*time.Millisecond {
			return "", nil
		}
		return fmt.Sprintf("link up after %s", up.Round(time.Millisecond)), nil
	}
	if err := clk.Sleep(ctx, settle); err != nil {
		return "", err
	}
	return fmt.Sprintf("link bounced (carrier_changes +%s): up after %s, then settled %s",
		strconv.FormatInt(after.carrierChanges-before.carrierChanges, 10), up.Round(time.Millisecond), settle), nil
}

// describe says what a link that is not ready shows.
func (s linkSnap) describe(before linkSnap) string {
	var parts []string
	if s.carrierOK {
		parts = append(parts, "carrier "+strconv.FormatInt(s.carrier, 10))
	}
	if s.ok && before.ok {
		parts = append(parts, "carrier_changes +"+strconv.FormatInt(s.carrierChanges-before.carrierChanges, 10))
	}
	return strings.Join(append(parts, "operstate "+s.oper), ", ")
}

// HWTstampMode is one `rig nicctl set --hwtstamp` mode: what one of rig's
// roles needs, decided as a run decides it (PrepareTimestamping: written
// only when not already granted, the rest of the config kept), or a
// config written as it is.
type HWTstampMode struct {
	Need   *tstamp.Need
	Config tstamp.HWTstampConfig
}

// HWTstampModes are the modes `rig nicctl set --hwtstamp` knows: "all" is
// what sender and responder need (TX ON, RX ALL), "rx" what a capture
// needs (RX ALL, tx_type as it is: an RX-only NIC such as ENA takes it);
// "ptp" is a PTP-only config such as ptp4l sets; "off" turns stamping off.
var HWTstampModes = map[string]HWTstampMode{
	"all": {Need: &tstamp.NeedProbe},
	"rx":  {Need: &tstamp.NeedCapture},
	"ptp": {Config: tstamp.HWTstampConfig{TxType: tstamp.TxOn, RxFilter: tstamp.FilterPTPv2Event}},
	"off": {Config: tstamp.HWTstampConfig{TxType: tstamp.TxOff, RxFilter: tstamp.FilterNone}},
}

// hwtsPlan is Set's timestamping step, decided before anything changes.
type hwtsPlan struct {
	mode HWTstampMode
	req  TSRequest
	want tstamp.HWTstampConfig // the config a mode without Need writes
	st   tstamp.NICState
}

func planHWTstamp(env *Env, iface string, s Settings) (*hwtsPlan, error) {
	m, ok := HWTstampModes[s.HWTstamp]
	if !ok {
		return nil, usage("--hwtstamp %q: want all, rx, ptp or off", s.HWTstamp)
	}
	p := &hwtsPlan{mode: m}
	if m.Need != nil {
		p.req = TSRequest{Mode: tstamp.Hardware, Need: *m.Need, AllowMgmt: s.AllowMgmt, TakeOver: s.TakeOverPTP}
		r, err := PlanTimestamping(env, iface, p.req)
		if err != nil {
			return nil, err
		}
		if r.Decision.Action == tstamp.ActRefuse || r.Decision.Action == tstamp.ActUnknown {
			return nil, refuse("hardware timestamps: %s; fix: %s", r.Decision.Why, r.Decision.Fix)
		}
		return p, nil
	}
	st, err := env.Timestamping(iface)
	if err != nil {
		return nil, err
	}
	p.st, p.want = st, m.Config
	p.want.Flags = st.Config.Flags & tstamp.FlagBondedPHC // a bond takes a change only with its flag
	switch {
	case !st.ConfigKnown:
		return nil, fmt.Errorf("%s cannot report its timestamping config (%s), so it could not be put back: refusing to change it (%w)", iface, st.ConfigErr, errors.ErrUnsupported)
	case st.Owner != "" && !s.TakeOverPTP:
		return nil, usage("%s: %s owns its timestamping config: refusing to change it (use --take-over-ptp if you really mean it)", iface, st.Owner)
	}
	return p, nil
}

func (p *hwtsPlan) apply(ctx context.Context, env *Env, j *journal.Journal, iface string) (Change, error) {
	chg := Change{What: "hwtstamp", Requested: p.mode.Config.String()}
	if p.mode.Need != nil {
		chg.Requested = p.mode.Need.String()
		r, err := PrepareTimestamping(ctx, env, j, iface, p.req)
		chg.Previous = r.State.Config.String()
		chg.Effective, chg.Note = chg.Previous, r.Decision.Why
		if r.Granted != nil {
			chg.Effective = r.Granted.String()
		}
		if r.Link != "" {
			chg.Note += "; " + r.Link
		}
		if err != nil {
			chg.Err = err.Error()
		}
		return chg, err
	}
	chg.Previous = p.st.Config.String()
	if p.st.Config == p.want {
		chg.Effective, chg.Note = chg.Previous, "already in force: no change"
		return chg, nil
	}
	got, link, _, err := writeTimestamping(ctx, env, j, iface, p.want)
	chg.Effective, chg.Note = got.String(), link
	if err != nil {
		chg.Err = err.Error()
	}
	return chg, err
}
