package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// clientModules are clients of the systems under test; the plugin only
// reads the cluster, so none may be linked into it.
var clientModules = []string{
	"github.com/jackc/pgx",                           // PostgreSQL
	"github.com/authzed",                             // SpiceDB
	"github.com/openfga",                             // OpenFGA
	"google.golang.org/grpc",                         // gRPC
	"github.com/ragcanary/ragcanary/internal/target", // the door to targets
}

// TestPluginLinksNoTargetClient: the kubectl plugin's import graph holds no
// database, gRPC or OpenFGA client, so a shared package that starts
// importing one (as report once did, through suite) fails here, naming it.
func TestPluginLinksNoTargetClient(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the plugin's imports: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	linked, importers := map[string]bool{}, map[string]bool{}
	for line := range strings.Lines(string(out)) {
		pkg := strings.Fields(line)
		for _, imp := range pkg {
			m := clientModule(imp)
			if m == "" {
				continue
			}
			linked[m] = true
			if imp != pkg[0] && clientModule(pkg[0]) == "" && strings.HasPrefix(pkg[0], "github.com/ragcanary/") {
				importers[pkg[0]+" imports "+imp] = true
			}
		}
	}
	if len(linked) > 0 {
		t.Errorf("the plugin links %q, through %q", sortedSet(linked), sortedSet(importers))
	}
}

// clientModule is the entry of clientModules that holds pkg, "" for none.
func clientModule(pkg string) string {
	for _, m := range clientModules {
		if pkg == m || strings.HasPrefix(pkg, m+"/") {
			return m
		}
	}
	return ""
}

func sortedSet(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
