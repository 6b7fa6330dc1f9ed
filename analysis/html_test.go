//go:build linux

package analysis

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rig-project/rig/internal/rundir"
	"github.com/rig-project/rig/internal/samples"
)

// chromiumPath finds Debian's chromium (the Makefile/CI installs it).
func chromiumPath() string {
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// chromium runs headless Chromium with its own profile directory, in its
// own process group, which is killed when it returns (no renderer is left
// behind, even after a timeout).
func chromium(t *testing.T, bin string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // stragglers of the group; ESRCH when none
	}
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// layoutProbe is appended to a copy of report.html (report.html itself has
// no script): after load it measures the page as a reader sees it and
// writes the result into <pre id="rig-layout"> for --dump-dom.
const layoutProbe = `<script>
window.addEventListener('load', function () {
  var de = document.documentElement;
  var out = {cw: de.clientWidth, sw: de.scrollWidth, h: de.scrollHeight, plots: [], wide: [], summary: null};
  var rect = function (e) { var r = e.getBoundingClientRect(); return {x: r.left + window.scrollX, y: r.top + window.scrollY, w: r.width, h: r.height}; };
  var s = document.getElementById('summary');
  if (s) { out.summary = rect(s); out.summary.text = s.innerText; }
  document.querySelectorAll('table, figure, p, ul, h1, h2, h3').forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.right > de.clientWidth + 0.5 || e.scrollWidth > e.clientWidth + 1) {
      out.wide.push({tag: e.tagName, right: r.right, sw: e.scrollWidth, cw: e.clientWidth, text: e.innerText.slice(0, 80)});
    }
  });
  document.querySelectorAll('img.plot').forEach(function (img) {
    var p = rect(img);
    window.scrollTo(0, Math.max(0, p.y - 20));
    var top = document.elementFromPoint(p.x + p.w / 2 - window.scrollX, p.y + p.h / 2 - window.scrollY);
    var cs = getComputedStyle(img);
    p.id = img.parentElement.id; p.complete = img.complete; p.nw = img.naturalWidth; p.nh = img.naturalHeight;
    p.onTop = top === img; p.visible = cs.visibility === 'visible' && cs.display !== 'none' && cs.opacity !== '0';
    out.plots.push(p);
  });
  window.scrollTo(0, 0);
  var pre = document.createElement('pre'); pre.id = 'rig-layout'; pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
</script>`

type box struct{ X, Y, W, H float64 }

type layout struct {
	CW, SW, H float64
	Summary   *struct {
		box
		Text string
	}
	Plots []struct {
		box
		ID             string
		Complete       bool
		NW, NH         int
		OnTop, Visible bool
	}
	Wide []map[string]any
}

var layoutRe = regexp.MustCompile(`(?s)<pre id="rig-layout">(.*?)</pre>`)

// measure loads page (with the probe) at 1366×768 and returns its layout
// and the rendered document.
func measure(t *testing.T, bin, page string, extra ...string) (layout, string) {
	t.Helper()
	dom := chromium(t, bin, append(extra, "--window-size=1366,768", "--dump-dom", "file://"+page)...)
	m := layoutRe.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the layout probe did not run: no <pre id=\"rig-layout\"> in the rendered page")
	}
	var l layout
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &l); err != nil {
		t.Fatalf("layout %s: %v", m[1], err)
	}
	return l, string(dom)
}

// inked returns the share of pixels in r that are not near-white, and how
// many distinct colours (to 4 bits a channel) they have.
func inked(img image.Image, r image.Rectangle) (float64, int) {
	r = r.Intersect(img.Bounds())
	if r.Empty() {
		return 0, 0
	}
	n := 0
	colours := map[uint32]bool{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cr < 0xf000 || cg < 0xf000 || cb < 0xf000 {
				n++
				colours[(cr>>12)<<8|(cg>>12)<<4|cb>>12] = true
			}
		}
	}
	return float64(n) / float64(r.Dx()*r.Dy()), len(colours)
}

// Arms of browserRun: long names, as people give them, widen the tables.
const (
	browserBase = "base-shared-cpu0"
	browserBusy = "isolated-cpu3-busy-poll"
)

// browserRun writes a run for the browser: arm browserBusy stalls at seq
// 100 (the telemetry places and explains it), its round 2 lost the
// responder file (a problem), and every host has its env/<host>.json.
func browserRun(t *testing.T) (string, *Report, []Plot) {
	dir := t.TempDir()
	spec := genSpec{Arms: []string{browserBase, browserBusy}, Rounds: 3, Count: 2000, Warmup: 20, Seed: 11, Capture: true,
		Events: map[string]map[int]map[uint64]string{browserBusy: {0: {100: "slow"}, 1: {100: "slow"}}}}
	writeRun(t, dir, spec)
	copyFixture(t, "cpu1-round0.json", rundir.RoundDir(dir, browserBusy, 0))
	copyFixture(t, "cpu1-round1.json", rundir.RoundDir(dir, browserBusy, 1))
	if err := os.Remove(filepath.Join(rundir.RoundDir(dir, browserBusy, 2), samples.FileName(samples.RoleResponder))); err != nil {
		t.Fatal(err)
	}
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(dir, rep); err != nil {
		t.Fatal(err)
	}
	plots, err := Plots(rep)
	if err != nil {
		t.Fatal(err)
	}
	return dir, rep, plots
}

// TestReportHTMLInChromium renders report.html in headless Chromium on a
// laptop-sized window (1366 px wide) and checks what a reader sees: the
// summary on the first screen, before the plots, with every arm's verdict,
// what was compared and the run's problems; every plot loaded, at a
// readable size, not covered, and drawn (its part of a screenshot is
// inked in several colours); no table or paragraph wider than the window.
func TestReportHTMLInChromium(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("chromium not installed (apt-get install -y chromium; `make deps` installs it, CI has it)")
	}
	if testing.Short() {
		t.Skip("-short: skipping the headless browser")
	}
	dir, rep, plots := browserRun(t)
	page := filepath.Join(dir, ReportHTML)
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	// Self-contained: nothing fetched from elsewhere, no script.
	for _, ref := range []string{"http://", "https://", "src=\"plots/", "<script"} {
		if bytes.Contains(raw, []byte(ref)) {
			t.Errorf("report.html contains %q: not self-contained", ref)
		}
	}
	probe := filepath.Join(t.TempDir(), "probe.html")
	if err := os.WriteFile(probe, bytes.Replace(raw, []byte("</body>"), []byte(layoutProbe+"</body>"), 1), 0o644); err != nil {
		t.Fatal(err)
	}

	// A laptop window with its scrollbar: nothing scrolls sideways.
	l, dom := measure(t, bin, probe)
	if l.CW < 1300 || l.SW > l.CW {
		t.Errorf("page is %.0f px wide in a %.0f px window: it scrolls sideways", l.SW, l.CW)
	}
	for _, w := range l.Wide {
		t.Errorf("wider than the window or overflowing its box: %v", w)
	}
	if l.Summary == nil {
		t.Fatal("no summary section (id=summary)")
	}
	if l.Summary.Y > 300 || l.Summary.H < 100 {
		t.Errorf("summary at y=%.0f, %.0f px high: it must open the page", l.Summary.Y, l.Summary.H)
	}
	txt := l.Summary.Text
	for _, want := range []string{"Verdicts", "What was compared", "Problems of this run", "Timestamps requested: software",
		browserBusy + ": turnaround median ", " on " + browserBase + " (", browserBase + " (baseline): turnaround median ", "capture sw, CLOCK_REALTIME",
		"arm \"" + browserBusy + "\" round 2: left out of every statistic: responder.samples is missing", "rig-rsp0 veth"} {
		if !strings.Contains(strings.ToLower(txt), strings.ToLower(want)) {
			t.Errorf("summary does not show %q:\n%s", want, txt)
		}
	}
	if len(l.Plots) != len(plots) || len(plots) != 7+3 { // 7 metrics (no network on sw clocks), 3 rounds over time
		t.Fatalf("%d plots in the page, %d rendered", len(l.Plots), len(plots))
	}
	ids := map[string]bool{}
	for _, p := range l.Plots {
		ids[p.ID] = true
	}
	for _, p := range plots {
		if !ids["plot-"+p.Name] {
			t.Errorf("plot %s is not in the page", p.Name)
		}
	}
	for _, p := range l.Plots {
		if !p.Complete || p.NW != 1152 || p.NH != 648 || !p.Visible || !p.OnTop || p.W < 500 || p.H < 280 {
			t.Errorf("plot %s not visible: %+v", p.ID, p)
		}
		if p.Y < l.Summary.Y+l.Summary.H {
			t.Errorf("plot %s at y=%.0f comes before the end of the summary", p.ID, p.Y)
		}
	}

	// The same page without scrollbars, screenshotted whole: the summary
	// and every plot are drawn where the layout says.
	l, _ = measure(t, bin, probe, "--hide-scrollbars")
	shot := filepath.Join(t.TempDir(), "report.png")
	height := min(int(l.H)+10, 16000)
	chromium(t, bin, "--hide-scrollbars", "--screenshot="+shot, "--window-size=1366,"+strconv.Itoa(height), "file://"+page)
	if keep := os.Getenv("RIG_REPORT_SHOT"); keep != "" {
		b, _ := os.ReadFile(shot)
		_ = os.WriteFile(keep, b, 0o644)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	rect := func(b box) image.Rectangle {
		return image.Rect(int(b.X)+2, int(b.Y)+2, int(b.X+b.W)-2, int(b.Y+b.H)-2)
	}
	if frac, _ := inked(img, rect(l.Summary.box)); frac < 0.03 {
		t.Errorf("summary area is blank in the screenshot: %.4f inked", frac)
	}
	for _, p := range l.Plots {
		frac, colours := inked(img, rect(p.box))
		if frac < 0.03 || colours < 8 {
			t.Errorf("plot %s is blank in the screenshot: %.4f inked, %d colours", p.ID, frac, colours)
		}
	}

	// The rendered document names every arm and the rules.
	for _, a := range rep.Arms {
		if !strings.Contains(dom, a.Name) {
			t.Errorf("rendered page does not show arm %q", a.Name)
		}
	}
	if !strings.Contains(dom, "nearest-rank") || !strings.Contains(dom, "<img") {
		t.Error("rendered page lacks the rules or the plots")
	}
}
