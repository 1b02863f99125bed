package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// RepoBinary finds bin/<name> in the repository above the working
// directory (tests run in their package's folder). The repository's root
// ends the search; hack/tools modules have go.mod files of their own. When
// the binary is missing, the path is still where it belongs (empty when no
// repository root was found), so an error can name the make target.
func RepoBinary(name string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "bin", name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil && !strings.Contains(dir, "hack") {
			return p, fmt.Errorf("%s not found", p)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("bin/%s not found above the working directory", name)
		}
		dir = parent
	}
}

// FreePort is a TCP port on 127.0.0.1 that was free a moment ago, for a
// server a test starts.
func FreePort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// RandomKey is a fresh secret for a test server, recognisable by prefix.
func RandomKey(t testing.TB, prefix string) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}
