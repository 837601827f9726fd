package main

import (
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// The SBOM is an SPDX 2.3 document in its JSON form (spdx.github.io/spdx-spec/v2.3): one
// package per shipped binary (the operator per image platform, the plugin per archive), one
// per Go module any of them links (and the Go standard library), and a DEPENDS_ON relation
// from each binary to each module it links. What a binary links is read from the binary
// itself (debug/buildinfo, the module list the Go linker embeds), not from go.mod: a module
// the build pruned is not shipped, and a module only one platform links is listed for that
// platform's binary only.

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
	Name                  string            `json:"name"`
	SPDXID                string            `json:"SPDXID"`
	VersionInfo           string            `json:"versionInfo"`
	DownloadLocation      string            `json:"downloadLocation"`
	FilesAnalyzed         bool              `json:"filesAnalyzed"`
	PrimaryPackagePurpose string            `json:"primaryPackagePurpose"`
	Checksums             []spdxChecksum    `json:"checksums,omitempty"`
	ExternalRefs          []spdxExternalRef `json:"externalRefs,omitempty"`
	Comment               string            `json:"comment,omitempty"`
}

type spdxChecksum struct {
	Algorithm     string `json:"algorithm"`
	ChecksumValue string `json:"checksumValue"`
}

type spdxExternalRef struct {
	ReferenceCategory string `json:"referenceCategory"`
	ReferenceType     string `json:"referenceType"`
	ReferenceLocator  string `json:"referenceLocator"`
}

type spdxRelationship struct {
	SPDXElementID      string `json:"spdxElementId"`
	RelationshipType   string `json:"relationshipType"`
	RelatedSPDXElement string `json:"relatedSpdxElement"`
}

// sbomBinary is one shipped binary.
type sbomBinary struct{ name, platform, path string }

// sbomFile is the SBOM's name in the release.
func sbomFile(version string) string { return fmt.Sprintf("valkey-operator_%s.spdx.json", version) }

// writeSBOM writes the release's SBOM. Its creation time is the commit's and its namespace
// names the version and commit, so that it is as reproducible as the binaries it describes.
func writeSBOM(o options, created time.Time, binaries []sbomBinary) (string, error) {
	doc, err := sbom(o, created, binaries)
	if err != nil {
		return "", err
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(o.out, sbomFile(o.version))
	return path, os.WriteFile(path, append(data, '\n'), 0o644)
}

func sbom(o options, created time.Time, binaries []sbomBinary) (spdxDocument, error) {
	doc := spdxDocument{
		SPDXVersion: "SPDX-2.3",
		DataLicense: "CC0-1.0",
		SPDXID:      "SPDXRef-DOCUMENT",
		Name:        "valkey-operator-" + o.version,
		DocumentNamespace: fmt.Sprintf("https://github.com/valkey-fsm/valkey-operator/releases/%s/%s?commit=%s",
			o.version, sbomFile(o.version), o.commit),
		CreationInfo: spdxCreationInfo{
			Created:  created.UTC().Format(time.RFC3339),
			Creators: []string{"Organization: valkey-fsm", "Tool: valkey-operator-hack-release-" + o.version},
		},
	}
	modules := map[string]spdxPackage{}
	var rels []spdxRelationship
	for _, b := range binaries {
		bi, err := buildinfo.ReadFile(b.path)
		if err != nil {
			return doc, fmt.Errorf("reading the build information of %s: %w", b.path, err)
		}
		data, err := os.ReadFile(b.path)
		if err != nil {
			return doc, err
		}
		id := spdxID("binary", b.name, b.platform)
		doc.Packages = append(doc.Packages, spdxPackage{
			Name:                  b.name,
			SPDXID:                id,
			VersionInfo:           o.version,
			DownloadLocation:      "NOASSERTION",
			PrimaryPackagePurpose: "APPLICATION",
			Checksums:             []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: sha256Hex(data)}},
			ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
				ReferenceLocator: fmt.Sprintf("pkg:golang/%s@%s?os=%s&arch=%s", bi.Main.Path, o.version, goos(b.platform), goarch(b.platform))}},
			Comment: fmt.Sprintf("%s for %s, built with %s from %s (%s)", b.name, b.platform, bi.GoVersion, bi.Path, o.commit),
		})
		rels = append(rels, spdxRelationship{"SPDXRef-DOCUMENT", "DESCRIBES", id})
		deps := append([]*debugModule{{Path: "stdlib", Version: bi.GoVersion}}, modulesOf(bi)...)
		for _, m := range deps {
			p, err := modulePackage(m)
			if err != nil {
				return doc, fmt.Errorf("%s: %w", b.path, err)
			}
			if prev, ok := modules[p.SPDXID]; ok && (prev.Name != p.Name || prev.VersionInfo != p.VersionInfo) {
				return doc, fmt.Errorf("two modules, %s@%s and %s@%s, would share the SPDX id %s", prev.Name, prev.VersionInfo, p.Name, p.VersionInfo, p.SPDXID)
			}
			modules[p.SPDXID] = p
			rels = append(rels, spdxRelationship{id, "DEPENDS_ON", p.SPDXID})
		}
	}
	ids := make([]string, 0, len(modules))
	for id := range modules {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		doc.Packages = append(doc.Packages, modules[id])
	}
	doc.Relationships = rels
	return doc, nil
}

// debugModule is a module as the binary records it, after any replace directive.
type debugModule struct{ Path, Version, Sum string }

func modulesOf(bi *buildinfo.BuildInfo) []*debugModule {
	var out []*debugModule
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		out = append(out, &debugModule{Path: d.Path, Version: d.Version, Sum: d.Sum})
	}
	return out
}

// modulePackage is a Go module's package: its purl, and its go.sum hash (h1:, the base64
// SHA-256 of the module's file tree as Go's dirhash computes it) both as the SPDX SHA256
// checksum other SBOM tools write for Go modules and verbatim in the comment.
func modulePackage(m *debugModule) (spdxPackage, error) {
	p := spdxPackage{
		Name:                  m.Path,
		SPDXID:                spdxID("gomod", m.Path, m.Version),
		VersionInfo:           m.Version,
		DownloadLocation:      "NOASSERTION",
		PrimaryPackagePurpose: "LIBRARY",
		ExternalRefs: []spdxExternalRef{{ReferenceCategory: "PACKAGE-MANAGER", ReferenceType: "purl",
			ReferenceLocator: "pkg:golang/" + m.Path + "@" + m.Version}},
	}
	if h, ok := strings.CutPrefix(m.Sum, "h1:"); ok {
		raw, err := base64.StdEncoding.DecodeString(h)
		if err != nil {
			return p, fmt.Errorf("module %s@%s: its sum %q: %w", m.Path, m.Version, m.Sum, err)
		}
		p.Checksums = []spdxChecksum{{Algorithm: "SHA256", ChecksumValue: hex.EncodeToString(raw)}}
		p.Comment = "go.sum " + m.Sum
	}
	return p, nil
}

var spdxUnsafe = regexp.MustCompile(`[^A-Za-z0-9.]+`)

// spdxID is an SPDX identifier (SPDXRef- and letters, digits, dots and dashes) of the parts.
func spdxID(parts ...string) string {
	for i, p := range parts {
		parts[i] = strings.Trim(spdxUnsafe.ReplaceAllString(p, "-"), "-")
	}
	return "SPDXRef-" + strings.Join(parts, "-")
}

func goos(platform string) string {
	os, _, _ := strings.Cut(platform, "/")
	return os
}

func goarch(platform string) string {
	_, arch, _ := strings.Cut(platform, "/")
	return arch
}
