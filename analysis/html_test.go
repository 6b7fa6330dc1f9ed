package analysis

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

func chromium(t *testing.T, bin string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir()}, extra...)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", bin, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// TestReportHTMLInChromium renders report.html in headless Chromium: the
// screenshot must not be blank and the page text must name every arm.
func TestReportHTMLInChromium(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("chromium not installed (apt-get install -y chromium; the Makefile installs it in CI)")
	}
	if testing.Short() {
		t.Skip("-short: skipping the headless browser")
	}
	dir := t.TempDir()
	spec := goldenSpec
	spec.Arms = []string{"arm-alpha-base", "arm-omega-isolcpus"}
	spec.Events = nil
	writeRun(t, dir, spec)
	rep, err := Run(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(dir, rep); err != nil {
		t.Fatal(err)
	}
	page := filepath.Join(dir, ReportHTML)
	html, _ := os.ReadFile(page)
	// Self-contained: nothing fetched from elsewhere.
	for _, ref := range []string{"http://", "https://", "src=\"plots/", "<script"} {
		if bytes.Contains(html, []byte(ref)) {
			t.Errorf("report.html contains %q: not self-contained", ref)
		}
	}
	url := "file://" + page
	shot := filepath.Join(t.TempDir(), "shot.png")
	chromium(t, bin, "--screenshot="+shot, "--window-size=1200,2000", url)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	nonWhite := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xf000 || g < 0xf000 || bl < 0xf000 {
				nonWhite++
			}
		}
	}
	if frac := float64(nonWhite) / float64(b.Dx()*b.Dy()); frac < 0.01 {
		t.Fatalf("screenshot %dx%d is blank: %.4f of the pixels are not white", b.Dx(), b.Dy(), frac)
	}
	dom := string(chromium(t, bin, "--dump-dom", url))
	for _, a := range spec.Arms {
		if !strings.Contains(dom, a) {
			t.Errorf("rendered page does not show arm %q", a)
		}
	}
	if !strings.Contains(dom, "nearest-rank") || !strings.Contains(dom, "<img") {
		t.Error("rendered page lacks the rules or the plots")
	}
}
