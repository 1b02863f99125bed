package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The HTML report is opened in a real browser, Debian's chromium package,
// headless and offline: the screenshot must show the chart's colours and the
// page must not be blank; the DOM Chromium built must hold every table row.

// chromiumFlags start Chromium headless with nothing that reaches a network
// or a profile left by another run.
func chromiumFlags(userDataDir string) []string {
	return []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + userDataDir, "--window-size=1200,1600"}
}

// chromium finds the browser; the test fails, never skips, without it.
func chromium(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed: run 'make chromium-tools' (hack/install-chromium.sh installs Debian's chromium package): %v", err)
	}
	return path
}

// runChromium runs one headless Chromium with a fresh, empty profile.
func runChromium(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium(t), append(chromiumFlags(t.TempDir()), args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

func writeReport(t *testing.T, ev Evidence) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if err := os.WriteFile(path, render(t, ev, FormatHTML), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func screenshot(t *testing.T, report string) image.Image {
	t.Helper()
	shot := filepath.Join(t.TempDir(), "shot.png")
	runChromium(t, "--screenshot="+shot, "file://"+report)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	return img
}

// pixels summarises a screenshot: how many pixels are close to each colour
// asked about, and how many are not white.
type pixels struct {
	total, nonWhite int
	near            map[string]int
}

func countPixels(img image.Image, hexColors ...string) pixels {
	want := map[string]color.RGBA{}
	for _, h := range hexColors {
		want[h] = parseHex(h)
	}
	p := pixels{near: map[string]int{}}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			c := color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}
			p.total++
			if c.R < 250 || c.G < 250 || c.B < 250 {
				p.nonWhite++
			}
			for h, w := range want {
				if near(c, w) {
					p.near[h]++
				}
			}
		}
	}
	return p
}

// near allows for the small shifts colour management may apply.
func near(a, b color.RGBA) bool {
	d := func(x, y uint8) int {
		if x > y {
			return int(x - y)
		}
		return int(y - x)
	}
	return d(a.R, b.R) <= 6 && d(a.G, b.G) <= 6 && d(a.B, b.B) <= 6
}

func parseHex(h string) color.RGBA {
	v, err := strconv.ParseUint(strings.TrimPrefix(h, "#"), 16, 32)
	if err != nil {
		panic(err)
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}
}

// tableRows counts the body rows of the table with the id in a DOM dump.
func tableRows(t *testing.T, dom, id string) int {
	t.Helper()
	re := regexp.MustCompile(`(?s)<table id="` + regexp.QuoteMeta(id) + `">.*?<tbody>(.*?)</tbody>`)
	m := re.FindStringSubmatch(dom)
	if m == nil {
		t.Fatalf("the rendered DOM has no table %q", id)
	}
	return strings.Count(m[1], "<tr>")
}

func TestHTMLRendersInChromium(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   func(*testing.T) Evidence
		// colours the screenshot must show, with the fewest pixels of each.
		colors map[string]int
		// rows each table must have in the DOM Chromium built.
		rows map[string]int
		// dom are strings the built DOM must hold.
		dom []string
	}{
		{
			name: "canaryrun",
			ev:   func(*testing.T) Evidence { return BuildCanary(canaryFixture(), reportTime) },
			// Two interval bars (the answer's about 44×18 px) and two SLO lines 3 px wide.
			colors: map[string]int{colorInterval: 400, colorSLO: 150},
			rows:   map[string]int{"bounds": 2, "probe-counts": 2, "controls": 2, "timeline-events": 12, "persona-specs": 3, "secret-names": 4},
			dom:    []string{`id="exclusion-chart"`, `class="interval"`, `class="slo"`},
		},
		{
			name:   "suiterun",
			ev:     suiteEvidence,
			colors: map[string]int{colorUtility: 2000, colorDisclosure: 2000},
			rows:   map[string]int{"gate-results": 5, "personas": 2, "stratum-finance": 1, "stratum-hr": 2, "failing-cases": 4},
			dom:    []string{`id="persona-chart"`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			report := writeReport(t, tc.ev(t))
			img := screenshot(t, report)
			if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 1600 {
				t.Errorf("screenshot is %dx%d, want the 1200x1600 window", b.Dx(), b.Dy())
			}
			var hex []string
			for h := range tc.colors {
				hex = append(hex, h)
			}
			px := countPixels(img, hex...)
			// A blank or failed page is (almost) all white.
			if px.nonWhite*50 < px.total {
				t.Errorf("screenshot looks blank: %d of %d pixels are not white", px.nonWhite, px.total)
			}
			for h, least := range tc.colors {
				if px.near[h] < least {
					t.Errorf("screenshot has %d pixels of %s, want at least %d", px.near[h], h, least)
				}
			}
			dom := string(runChromium(t, "--dump-dom", "file://"+report))
			for id, want := range tc.rows {
				if got := tableRows(t, dom, id); got != want {
					t.Errorf("table %s has %d rows in the rendered DOM, want %d", id, got, want)
				}
			}
			for _, s := range tc.dom {
				if !strings.Contains(dom, s) {
					t.Errorf("rendered DOM lacks %s", s)
				}
			}
			if t.Failed() {
				t.Log(fmt.Sprintf("pixel counts: %v", px.near))
			}
		})
	}
}
