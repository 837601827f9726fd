package history

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine/replay"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// ReplayOptions are history --replay's flags.
type ReplayOptions struct {
	// FromFile reads an exported journal instead of the operator's ("-": standard input).
	FromFile string
	// Sets are the --set KEY=VALUE overrides of a what-if.
	Sets []string
	// Every prints every decision, not runs of same ones folded into a line.
	Every bool
}

// errNotDeterministic is a plain replay that found a decision the machine takes otherwise
// now: the command fails, after the report.
type errNotDeterministic struct{ differed int }

func (e errNotDeterministic) Error() string {
	return fmt.Sprintf("the replay differs from the journal in %d decisions: the machine is not deterministic on this journal (see above)", e.differed)
}

// runReplay is history --replay: the journal (from the operator through the API server, or
// from a file) replayed through the machine, as `kubectl valkey replay` does.
func runReplay(ctx context.Context, flags *kube.Flags, name string, o ReplayOptions, format output.Format, w io.Writer) error {
	overrides, err := replay.ParseOverrides(o.Sets)
	if err != nil {
		return err
	}
	var raw []byte
	if o.FromFile != "" {
		if o.FromFile == "-" {
			raw, err = io.ReadAll(os.Stdin)
		} else {
			raw, err = os.ReadFile(o.FromFile)
		}
		if err != nil {
			return fmt.Errorf("reading the journal: %w", err)
		}
	} else if raw, _, err = journalOf(ctx, flags, name); err != nil {
		return err
	}
	j, err := replay.Read(bytes.NewReader(raw))
	if err != nil {
		return err
	}
	if parts := strings.Split(j.Cluster, "/"); len(parts) == 3 && parts[1] != name {
		return fmt.Errorf("the journal is the one of %s/%s, not of %s", parts[0], parts[1], name)
	}
	rep := replay.Replay(j, overrides)
	if format == output.Text {
		err = rep.Write(w, o.Every)
	} else {
		// Every step, whatever --every-step says, and the timings of a what-if.
		err = output.Encode(w, struct {
			*replay.Report
			Timings []replay.Timing `json:"timings,omitempty"`
		}{&rep, rep.Timings()}, format)
	}
	if err != nil {
		return err
	}
	if !rep.WhatIf() && rep.Differed > 0 {
		return errNotDeterministic{rep.Differed}
	}
	return nil
}
