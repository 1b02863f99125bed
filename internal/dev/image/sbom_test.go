package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sbomDoc is the part of an SPDX document the tests read.
type sbomDoc struct {
	SPDXVersion   string `json:"spdxVersion"`
	DataLicense   string `json:"dataLicense"`
	SPDXID        string `json:"SPDXID"`
	Namespace     string `json:"documentNamespace"`
	CreationInfo  struct{ Created string }
	Packages      []spdxPackage      `json:"packages"`
	Relationships []spdxRelationship `json:"relationships"`
}

func readSBOM(t *testing.T, path string) sbomDoc {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc sbomDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestSBOMListsModulesOfEachBinaryAndTheCAPackage(t *testing.T) {
	b, out := builtHello(t)
	doc := readSBOM(t, filepath.Join(out, "hello.spdx.json"))
	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" {
		t.Errorf("header %s %s %s", doc.SPDXVersion, doc.DataLicense, doc.SPDXID)
	}
	if doc.CreationInfo.Created != "2026-11-02T03:04:05Z" {
		t.Errorf("created %q, want the commit time", doc.CreationInfo.Created)
	}
	digest, err := b.Index.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(doc.Namespace, digest.Hex) {
		t.Errorf("namespace %q does not name the index %s", doc.Namespace, digest)
	}
	byID := map[string]spdxPackage{}
	for _, p := range doc.Packages {
		if _, dup := byID[p.SPDXID]; dup {
			t.Errorf("SPDX ID %s twice", p.SPDXID)
		}
		byID[p.SPDXID] = p
	}
	deps := dependsOn(doc)
	for _, bin := range b.Binaries {
		id := spdxID("SPDXRef-Binary", platformSlug(bin.Platform))
		p, ok := byID[id]
		if !ok {
			t.Fatalf("no package %s", id)
		}
		body, err := os.ReadFile(bin.Path)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(body)
		if len(p.Checksums) != 1 || p.Checksums[0].Value != hex.EncodeToString(sum[:]) {
			t.Errorf("%s checksums %+v", id, p.Checksums)
		}
		linked := map[string]string{}
		for _, dep := range deps[id] {
			linked[byID[dep].Name] = byID[dep].VersionInfo
		}
		if linked["github.com/google/go-containerregistry"] != "v0.22.1" || linked["stdlib"] != bin.Info.GoVersion {
			t.Errorf("%s depends on %v, want go-containerregistry v0.22.1 and stdlib %s", id, linked, bin.Info.GoVersion)
		}
	}
	ca := byID["SPDXRef-Debian-ca-certificates"]
	if ca.Name != "ca-certificates" || ca.VersionInfo != testBase.CACertsVersion ||
		len(ca.ExternalRefs) != 1 || ca.ExternalRefs[0].Locator != "pkg:deb/debian/ca-certificates@20230311%2Bdeb12u1?arch=all" {
		t.Errorf("ca-certificates package %+v", ca)
	}
	for _, r := range doc.Relationships {
		if _, ok := byID[r.Related]; !ok {
			t.Errorf("relationship %+v names no package", r)
		}
		if _, ok := byID[r.Element]; !ok && r.Element != "SPDXRef-DOCUMENT" {
			t.Errorf("relationship %+v names no package", r)
		}
	}
}

func dependsOn(doc sbomDoc) map[string][]string {
	deps := map[string][]string{}
	for _, r := range doc.Relationships {
		if r.Type == "DEPENDS_ON" {
			deps[r.Element] = append(deps[r.Element], r.Related)
		}
	}
	return deps
}

func TestSBOMKeepsPackagesWhoseIDsFold(t *testing.T) {
	s := newSBOMBuilder()
	a := s.add(spdxPackage{Name: "example.test/a/b-c", SPDXID: spdxID("SPDXRef-Go", "example.test/a/b-c-v1.0.0"), VersionInfo: "v1.0.0"})
	b := s.add(spdxPackage{Name: "example.test/a-b/c", SPDXID: spdxID("SPDXRef-Go", "example.test/a-b/c-v1.0.0"), VersionInfo: "v1.0.0"})
	again := s.add(spdxPackage{Name: "example.test/a/b-c", SPDXID: spdxID("SPDXRef-Go", "example.test/a/b-c-v1.0.0"), VersionInfo: "v1.0.0"})
	if a == b || again != a || len(s.packages) != 2 {
		t.Errorf("IDs %s %s %s, %d packages: want two distinct packages", a, b, again, len(s.packages))
	}
}
