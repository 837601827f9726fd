package report

import (
	"fmt"
	"strings"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// Summary is what report -o json or -o yaml prints instead of the text summary: the same
// facts (summary.txt in the archive stays text), redacted as every file is.
type Summary struct {
	// Cluster is NAMESPACE/NAME.
	Cluster string `json:"cluster"`
	// Archive is the path of the .tar.gz written.
	Archive string `json:"archive"`
	// Collected are the parts in the archive, in the order they were collected.
	Collected []string `json:"collected"`
	// Missing are the parts that could not be collected, each with why.
	Missing []MissingPart `json:"missing,omitempty"`
	// Notes are what else the summary says (a Secret that could not be read).
	Notes []string `json:"notes,omitempty"`
}

// MissingPart is a part the report could not collect.
type MissingPart struct {
	Part   string `json:"part"`
	Reason string `json:"reason"`
}

// structured is b's summary as a Summary.
func (b *bundle) structured(cluster, archive string) Summary {
	s := Summary{Cluster: cluster, Archive: archive, Collected: []string{}}
	clean := func(text string) string { return string(b.redact.redact([]byte(text))) }
	for _, p := range b.parts {
		if p.err == nil {
			s.Collected = append(s.Collected, p.name)
			continue
		}
		first, _, _ := strings.Cut(p.err.Error(), "\n")
		s.Missing = append(s.Missing, MissingPart{Part: p.name, Reason: clean(first)})
	}
	for _, n := range b.notes {
		s.Notes = append(s.Notes, clean(n))
	}
	return s
}

// format is report's -o: an output format, with a hint for the archive's file, which -o
// named before it became the output format of every verb that reads.
type format struct{ output.Format }

func (f *format) Set(s string) error {
	if err := f.Format.Set(s); err != nil {
		return fmt.Errorf("%w (the archive's file is --%s %s)", err, archiveFlag, s)
	}
	return nil
}
