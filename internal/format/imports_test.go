package format

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ragcanary/ragcanary"

// deps lists every package the patterns import, directly or not, as `go
// list` resolves them for this module; withTests adds what their test files
// import.
func deps(t *testing.T, withTests bool, patterns ...string) []string {
	t.Helper()
	args := []string{"list", "-deps", "-f", "{{.ImportPath}}"}
	if withTests {
		args = append(args, "-test")
	}
	args = append(args, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	var paths []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		// A package built again for a test is listed as "path [pkg.test]".
		path, _, _ := strings.Cut(line, " ")
		paths = append(paths, path)
	}
	return paths
}

// TestControllersDoNotImportPlugin: the controllers format their printer
// columns through this leaf, never through the kubectl plugin's package, so
// the plugin can change how it talks to people without touching the
// operator's dependency graph.
func TestControllersDoNotImportPlugin(t *testing.T) {
	all := deps(t, true, module+"/controllers/...")
	var sawControllers bool
	for _, p := range all {
		if p == module+"/controllers" {
			sawControllers = true
		}
		if p == module+"/internal/cli" || strings.HasPrefix(p, module+"/internal/cli/") {
			t.Errorf("controllers/... depends on %s", p)
		}
	}
	if !sawControllers {
		t.Fatalf("go list did not list %s/controllers; got %d packages", module, len(all))
	}
}

// TestIsLeaf: this package imports nothing of the module but the API types,
// so anything may format through it without pulling in a controller, the
// plugin or a driver.
func TestIsLeaf(t *testing.T) {
	self := module + "/internal/format"
	allowed := map[string]bool{self: true, module + "/api/v1alpha1": true}
	all := deps(t, false, self)
	var sawSelf bool
	for _, p := range all {
		if p == self {
			sawSelf = true
		}
		if (p == module || strings.HasPrefix(p, module+"/")) && !allowed[p] {
			t.Errorf("%s depends on %s", self, p)
		}
	}
	if !sawSelf {
		t.Fatalf("go list did not list %s; got %d packages", self, len(all))
	}
}
