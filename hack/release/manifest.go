package main

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// The krew manifest's schema (krew.googlecontainertools.github.com/v1alpha2 Plugin), the parts
// a plugin sets. krew's own types live in an internal package of its module.
type krewPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec krewSpec `json:"spec"`
}

type krewSpec struct {
	Version          string         `json:"version"`
	Homepage         string         `json:"homepage"`
	ShortDescription string         `json:"shortDescription"`
	Description      string         `json:"description"`
	Caveats          string         `json:"caveats"`
	Platforms        []krewPlatform `json:"platforms"`
}

type krewPlatform struct {
	Selector struct {
		MatchLabels map[string]string `json:"matchLabels"`
	} `json:"selector"`
	URI    string     `json:"uri"`
	Sha256 string     `json:"sha256"`
	Bin    string     `json:"bin"`
	Files  []krewFile `json:"files"`
}

type krewFile struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func krewManifest(o options, archives []archive) ([]byte, error) {
	p := krewPlugin{APIVersion: "krew.googlecontainertools.github.com/v1alpha2", Kind: "Plugin"}
	p.Metadata.Name = "valkey"
	p.Spec = krewSpec{
		Version:          o.version,
		Homepage:         "https://github.com/valkey-fsm/valkey-operator",
		ShortDescription: "Inspect and operate clusters of the valkey-operator",
		Description: `Shows what the valkey-operator's state machine recorded for a ValkeyCluster
(status, every transition in history) and writes intent for it to carry out: a
switchover, a rolling restart, a reshard, a backup, a password rotation, a
hibernation. cli opens valkey-cli on a node without a password on any command
line; report collects a support bundle with every secret redacted.`,
		Caveats: `The verbs act on ValkeyClusters of the valkey-operator (install it with its
Helm chart) and use your kubeconfig's credentials: what you may do is what your
RBAC allows.`,
	}
	for _, a := range archives {
		var pl krewPlatform
		pl.Selector.MatchLabels = map[string]string{"os": a.os, "arch": a.arch}
		pl.URI = fmt.Sprintf("%s/%s/%s", o.downloadBase, o.version, a.name)
		pl.Sha256 = a.sha256
		pl.Bin = a.binary()
		pl.Files = []krewFile{{From: a.binary(), To: "."}, {From: "LICENSE", To: "."}}
		p.Spec.Platforms = append(p.Spec.Platforms, pl)
	}
	return yaml.Marshal(p)
}
