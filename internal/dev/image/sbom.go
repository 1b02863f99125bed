package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// SBOMMediaType is the media type of the SPDX document, as a file's and as
// an OCI referrer's artifact type.
const SBOMMediaType = "application/spdx+json"

// The SPDX 2.3 JSON document, with only the fields this SBOM fills. Structs,
// not maps, keep the field order and so the bytes stable.
type spdxDocument struct {
	SPDXVersion       string             `json:"spdxVersion"`
	DataLicense       string             `json:"dataLicense"`
	SPDXID            string             `json:"SPDXID"`
	Name              string             `json:"name"`
	DocumentNamespace string             `json:"documentNamespace"`
	CreationInfo      spdxCreationInfo   `json:"creationInfo"`
	Packages          []spdxPackage      `json:"packages"`
	Relationships     []spdxRelationship `json:"relationships"`
}

type spdxCreationInfo struct {
	Created  string   `json:"created"`
	Creators []string `json:"creators"`
}

type spdxPackage struct {
	Name             string            `json:"name"`
	SPDXID           string            `json:"SPDXID"`
	VersionInfo      string            `json:"versionInfo,omitempty"`
	Supplier         string            `json:"supplier,omitempty"`
	DownloadLocation string            `json:"downloadLocation"`
	FilesAnalyzed    bool              `json:"filesAnalyzed"`
	Checksums        []spdxChecksum    `json:"checksums,omitempty"`
	LicenseConcluded string            `json:"licenseConcluded"`
	LicenseDeclared  string            `json:"licenseDeclared"`
	CopyrightText    string            `json:"copyrightText"`
	Comment          string            `json:"comment,omitempty"`
	ExternalRefs     []spdxExternalRef `json:"externalRefs,omitempty"`
	Purpose          string            `json:"primaryPackagePurpose,omitempty"`
}

type spdxChecksum struct {
	Algorithm string `json:"algorithm"`
	Value     string `json:"checksumValue"`
}

type spdxExternalRef struct {
	Category string `json:"referenceCategory"`
	Type     string `json:"referenceType"`
	Locator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	Element string `json:"spdxElementId"`
	Type    string `json:"relationshipType"`
	Related string `json:"relatedSpdxElement"`
}

const noAssertion = "NOASSERTION"

// SBOM is the SPDX 2.3 document of the image: the image, each platform's
// binary with the Go modules and standard library it was linked from (read
// from the binary's build info, as `go version -m` prints it), and the
// Debian package the CA bundle came from.
func (b *Built) SBOM() ([]byte, error) {
	digest, err := b.Index.Digest()
	if err != nil {
		return nil, err
	}
	s := newSBOMBuilder()
	image := s.add(spdxPackage{
		Name:        b.Spec.Repository,
		SPDXID:      "SPDXRef-Image",
		VersionInfo: b.Meta.Version,
		Checksums:   []spdxChecksum{{Algorithm: "SHA256", Value: digest.Hex}},
		Comment:     "OCI image index " + digest.String() + " built from revision " + b.Meta.Revision,
		ExternalRefs: []spdxExternalRef{purl("pkg:oci/" + purlEscape(lastElem(b.Spec.Repository)) +
			"@" + purlEscape(digest.String()))},
		Purpose: "CONTAINER",
	})
	s.relate("SPDXRef-DOCUMENT", "DESCRIBES", image)
	s.relate(image, "CONTAINS", s.add(b.caPackage()))
	for _, bin := range b.Binaries {
		if err := s.addBinary(image, bin, b.Meta); err != nil {
			return nil, err
		}
	}
	doc := spdxDocument{
		SPDXVersion:       "SPDX-2.3",
		DataLicense:       "CC0-1.0",
		SPDXID:            "SPDXRef-DOCUMENT",
		Name:              b.Spec.Reference(b.Meta),
		DocumentNamespace: strings.TrimSuffix(b.Meta.Source, "/") + "/spdx/" + b.Spec.Name + "/" + digest.Hex,
		CreationInfo: spdxCreationInfo{
			Created:  b.Meta.Created.UTC().Format(time.RFC3339),
			Creators: []string{"Tool: ragcanary-hack-image", "Organization: ragcanary"},
		},
		Packages:      s.packages,
		Relationships: s.relationships,
	}
	return json.MarshalIndent(doc, "", "  ")
}

func (b *Built) caPackage() spdxPackage {
	return spdxPackage{
		Name:        CACertsPackage,
		SPDXID:      "SPDXRef-Debian-ca-certificates",
		VersionInfo: b.Base.CACertsVersion,
		Supplier:    "Organization: Debian",
		Comment:     "provides " + CACertsPath,
		ExternalRefs: []spdxExternalRef{purl("pkg:deb/debian/" + CACertsPackage + "@" +
			purlEscape(b.Base.CACertsVersion) + "?arch=all")},
		Purpose: "OTHER",
	}
}

// sbomBuilder collects packages once each: a module linked into both
// platforms' binaries is one package with two relationships.
type sbomBuilder struct {
	packages      []spdxPackage
	byKey         map[string]string // proposed ID, name@version -> SPDX ID
	ids           map[string]bool
	relationships []spdxRelationship
}

func newSBOMBuilder() *sbomBuilder {
	return &sbomBuilder{byKey: map[string]string{}, ids: map[string]bool{}}
}

// add returns the package's SPDX ID, which differs from p.SPDXID when two
// names fold to the same ID (a/b-c and a-b/c).
func (s *sbomBuilder) add(p spdxPackage) string {
	key := p.SPDXID + " " + p.Name + "@" + p.VersionInfo
	if id, ok := s.byKey[key]; ok {
		return id
	}
	base := p.SPDXID
	for n := 2; s.ids[p.SPDXID]; n++ {
		p.SPDXID = fmt.Sprintf("%s-%d", base, n)
	}
	s.byKey[key], s.ids[p.SPDXID] = p.SPDXID, true
	if p.DownloadLocation == "" {
		p.DownloadLocation = noAssertion
	}
	p.LicenseConcluded, p.LicenseDeclared, p.CopyrightText = noAssertion, noAssertion, noAssertion
	s.packages = append(s.packages, p)
	return p.SPDXID
}

func (s *sbomBuilder) relate(a, kind, b string) {
	s.relationships = append(s.relationships, spdxRelationship{Element: a, Type: kind, Related: b})
}

func (s *sbomBuilder) addBinary(image string, bin Binary, m Meta) error {
	sum, err := fileSHA256(bin.Path)
	if err != nil {
		return err
	}
	id := s.add(spdxPackage{
		Name:         bin.Info.Path,
		SPDXID:       spdxID("SPDXRef-Binary", platformSlug(bin.Platform)),
		VersionInfo:  m.Version,
		Checksums:    []spdxChecksum{{Algorithm: "SHA256", Value: sum}},
		Comment:      "executable for " + bin.Platform.String(),
		ExternalRefs: []spdxExternalRef{purl(goPURL(bin.Info.Path, m.Version))},
		Purpose:      "APPLICATION",
	})
	s.relate(image, "CONTAINS", id)
	s.relate(id, "GENERATED_FROM", s.add(goModule(&bin.Info.Main, m)))
	s.relate(id, "DEPENDS_ON", s.add(spdxPackage{
		Name:         "stdlib",
		SPDXID:       spdxID("SPDXRef-Go-stdlib", bin.Info.GoVersion),
		VersionInfo:  bin.Info.GoVersion,
		ExternalRefs: []spdxExternalRef{purl(goPURL("stdlib", bin.Info.GoVersion))},
		Purpose:      "LIBRARY",
	}))
	for _, dep := range sortedDeps(bin.Info.Deps) {
		s.relate(id, "DEPENDS_ON", s.add(goModule(dep, m)))
	}
	return nil
}

// goModule is a module as linked: a replaced module is listed under its
// replacement, which is the code in the binary.
func goModule(mod *debug.Module, m Meta) spdxPackage {
	comment := ""
	if mod.Replace != nil {
		comment = "replaces " + mod.Path + "@" + mod.Version
		mod = mod.Replace
	}
	version := mod.Version
	if version == "(devel)" || version == "" {
		// The main module of a build without VCS stamping.
		version = m.Version
		comment = "revision " + m.Revision
	}
	return spdxPackage{
		Name:         mod.Path,
		SPDXID:       spdxID("SPDXRef-Go", mod.Path+"-"+version),
		VersionInfo:  version,
		Comment:      comment,
		ExternalRefs: []spdxExternalRef{purl(goPURL(mod.Path, version))},
		Purpose:      "LIBRARY",
	}
}

func sortedDeps(deps []*debug.Module) []*debug.Module {
	out := append([]*debug.Module(nil), deps...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Version < out[j].Version
	})
	return out
}

func purl(locator string) spdxExternalRef {
	return spdxExternalRef{Category: "PACKAGE-MANAGER", Type: "purl", Locator: locator}
}

// goPURL is pkg:golang/<path>@<version>; path segments are kept, only
// characters a purl reserves are escaped.
func goPURL(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = purlEscape(s)
	}
	return "pkg:golang/" + strings.Join(segs, "/") + "@" + purlEscape(version)
}

// purlEscape percent-encodes all but unreserved characters, as package URLs
// want ("+" in a Debian version, ":" in a digest).
func purlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

var notIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]+`)

// spdxID is prefix-name with every character SPDX IDs forbid replaced.
func spdxID(prefix, name string) string {
	return prefix + "-" + notIDChars.ReplaceAllString(name, "-")
}

func lastElem(repo string) string { return repo[strings.LastIndex(repo, "/")+1:] }

func fileSHA256(path string) (string, error) {
	body, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("checksum: %w", err)
	}
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:]), nil
}
