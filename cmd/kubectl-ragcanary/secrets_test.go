package main

import (
	"encoding/base64"
	"strings"
	"testing"
)

// TestNoSecretValueInAnyOutput runs every command in every output format
// against a namespace whose Corpus, Personas and canary run reference
// Secrets with distinctive values, and finds none of them (nor their
// base64) in anything printed. The same commands then run as a user who
// cannot read Secrets at all, which shows the plugin never needs them.
func TestNoSecretValueInAnyOutput(t *testing.T) {
	fleetFixture(t, "secrets")
	invocations := [][]string{
		{"status", "-n", "secrets"},
		{"status", "-n", "secrets", "-o", "json"},
		{"status", "-A"},
		{"status", "-A", "-o", "json"},
		{"history", "docs-grant", "-n", "secrets"},
		{"history", "docs-grant", "-n", "secrets", "-o", "json"},
		{"history", "wiki-group", "-n", "secrets", "-o", "json"},
		{"run", "docs-grant", "-n", "secrets"},
		{"run", "suite/access", "-n", "secrets", "-o", "json"},
	}
	for _, kubeconfig := range []string{adminKubeconfig, readerKubeconfig} {
		for _, args := range invocations {
			res := newInvocation(kubeconfig, testNow).run(args...)
			if res.code == exitInvalid || (res.code != exitOK && !strings.HasPrefix(args[0], "status")) {
				t.Errorf("%q: exit %d; stderr: %s", args, res.code, res.stderr)
			}
			if res.stdout == "" {
				t.Errorf("%q printed nothing", args)
			}
			for name, value := range secretValues {
				for _, form := range []string{value, base64.StdEncoding.EncodeToString([]byte(value))} {
					if strings.Contains(res.stdout, form) || strings.Contains(res.stderr, form) {
						t.Errorf("%q printed the value of Secret %s", args, name)
					}
				}
			}
		}
	}
}
