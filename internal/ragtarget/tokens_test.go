package ragtarget_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ragcanary/ragcanary/internal/ragtarget"
)

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"tokens.yaml": "tok-a: user:alice\ntok-b: user:bob\n",
		"tokens.json": `{"tok-a": "user:alice", "tok-b": "user:bob"}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := ragtarget.LoadTokens(path)
		if err != nil || len(got) != 2 || got["tok-a"] != "user:alice" || got["tok-b"] != "user:bob" {
			t.Fatalf("%s: got %v, err %v", name, got, err)
		}
	}

	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("- secret-token-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ragtarget.LoadTokens(bad)
	if err == nil || strings.Contains(err.Error(), "secret-token-value") {
		t.Fatalf("bad file: err = %v; want an error that does not echo content", err)
	}
}

func TestParseTokenFlag(t *testing.T) {
	tok, p, err := ragtarget.ParseTokenFlag("abc=user:alice")
	if err != nil || tok != "abc" || p != "user:alice" {
		t.Fatalf("got %q %q %v", tok, p, err)
	}
	if _, _, err := ragtarget.ParseTokenFlag("s3cret"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("malformed flag: err = %v", err)
	}
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	for name, cfg := range map[string]ragtarget.Config{
		"no source token":       {},
		"unknown filter mode":   {SourceToken: "s", FilterMode: "sometimes"},
		"rate above one":        {SourceToken: "s", Faults: ragtarget.Faults{ErrorRate: 2}},
		"persona equals source": {SourceToken: "s", Tokens: map[string]string{"s": "user:a"}},
	} {
		if svc, err := ragtarget.New(cfg); err == nil {
			_ = svc.Close()
			t.Fatalf("%s: New accepted %+v", name, cfg)
		} else if strings.Contains(err.Error(), `"s"`) {
			t.Fatalf("%s: error echoes a token: %v", name, err)
		}
	}
}
