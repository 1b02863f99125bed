package image

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// The base follows distroless static's nonroot variant: a user 65532 with a
// home, a world-writable /tmp, and the CA bundle, and nothing else — no
// shell, no package manager, no libc (the binaries are static).
const (
	// NonrootUID and NonrootGID are distroless's nonroot user and group.
	NonrootUID = 65532
	NonrootGID = 65532

	// CACertsPath is where Debian's ca-certificates puts its bundle, and
	// where Go's crypto/x509 looks for one on Linux.
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"

	// CACertsPackage is the Debian package the bundle comes from.
	CACertsPackage = "ca-certificates"
)

// Passwd and Group are the base's /etc/passwd and /etc/group.
const (
	Passwd = "root:x:0:0:root:/root:/sbin/nologin\n" +
		"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	Group = "root:x:0:\n" +
		"nonroot:x:65532:\n"
)

// Base is what the base layer is made of.
type Base struct {
	// CACerts is the content of CACertsPath.
	CACerts []byte
	// CACertsVersion is the Debian version of the package it came from,
	// recorded in the SBOM.
	CACertsVersion string
}

// LocalBase reads the CA bundle and its package version from this machine's
// Debian ca-certificates package.
func LocalBase() (Base, error) {
	certs, err := os.ReadFile(CACertsPath)
	if err != nil {
		return Base{}, fmt.Errorf("CA bundle (install Debian's %s): %w", CACertsPackage, err)
	}
	version, err := debianVersion(CACertsPackage)
	if err != nil {
		return Base{}, err
	}
	return Base{CACerts: certs, CACertsVersion: version}, nil
}

// debianVersion is the installed version of a Debian package.
func debianVersion(pkg string) (string, error) {
	out, err := exec.Command("dpkg-query", "-W", "-f=${Version}", pkg).Output()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return "", fmt.Errorf("dpkg-query %s: %w: %s", pkg, err, strings.TrimSpace(string(exit.Stderr)))
	}
	if err != nil {
		return "", fmt.Errorf("dpkg-query %s: %w", pkg, err)
	}
	v := strings.TrimSpace(string(out))
	if v == "" {
		return "", fmt.Errorf("debian package %s is not installed", pkg)
	}
	return v, nil
}

// entries are the base layer's files. Parent directories are listed so a
// runtime never has to invent their owner or mode.
func (b Base) entries() ([]entry, error) {
	if len(b.CACerts) == 0 {
		return nil, errors.New("base has no CA certificates")
	}
	return []entry{
		dir("etc", 0o755, 0, 0),
		file("etc/passwd", 0o644, []byte(Passwd)),
		file("etc/group", 0o644, []byte(Group)),
		dir("etc/ssl", 0o755, 0, 0),
		dir("etc/ssl/certs", 0o755, 0, 0),
		file(strings.TrimPrefix(CACertsPath, "/"), 0o644, b.CACerts),
		dir("home", 0o755, 0, 0),
		dir("home/nonroot", 0o700, NonrootUID, NonrootGID),
		dir("tmp", 0o1777, 0, 0),
	}, nil
}
