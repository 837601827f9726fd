package history

import (
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/timeline"
)

// Options say how transitions are printed.
type Options struct {
	Format output.Format
	// Age shows how long ago instead of RFC 3339 times (text only).
	Age bool
	// Now is the clock ages are computed against.
	Now func() time.Time
}

// Print writes the status.history of vc in opts.Format: a table, or the list of entries as
// one JSON or YAML document.
func Print(w io.Writer, vc *v1beta1.ValkeyCluster, opts Options) error {
	return newPrinter(w, io.Discard, opts, false).print(vc)
}

// printer prints status.history, once or, for --watch, each time the cluster changes. It
// remembers the highest sequence number printed and prints only what follows it, so that a
// history that lost its oldest entries (it is bounded) or an update that changed something
// else prints nothing twice.
type printer struct {
	out, notes io.Writer
	opts       Options
	// stream: --watch. JSON and YAML print one document per entry rather than one list, and
	// text prints the header once.
	stream bool

	uid     types.UID
	last    uint64
	started bool
}

// newPrinter returns a printer writing transitions to out. Remarks that are not transitions
// (a recreated or deleted cluster, gaps in JSON or YAML) go to notes when the format is JSON
// or YAML, so that the stream on out stays parseable; in text they belong with the rows.
func newPrinter(out, notes io.Writer, opts Options, stream bool) *printer {
	if opts.Format != output.JSON && opts.Format != output.YAML {
		notes = out
	}
	return &printer{out: out, notes: notes, opts: opts, stream: stream}
}

func (p *printer) print(vc *v1beta1.ValkeyCluster) error {
	cluster := vc.Namespace + "/" + vc.Name
	if p.started && vc.UID != p.uid {
		fmt.Fprintf(p.notes, "ValkeyCluster %s was deleted and created again: its history starts over\n", cluster)
		p.last = 0
	}
	p.uid = vc.UID

	var fresh []v1beta1.HistoryEntry
	for _, e := range vc.Status.History {
		if e.Seq > 0 && uint64(e.Seq) > p.last {
			fresh = append(fresh, e)
		}
	}
	// Entries between the last printed and the first new one: gone from the bounded history
	// before they could be printed (on the first print, older than the history keeps).
	var gapFrom, gapTo uint64
	if len(fresh) > 0 && uint64(fresh[0].Seq) > p.last+1 {
		gapFrom, gapTo = p.last+1, uint64(fresh[0].Seq)-1
	}
	first := !p.started
	p.started = true

	switch p.opts.Format {
	case output.JSON, output.YAML:
		return p.encode(cluster, fresh, first, gapFrom, gapTo)
	}
	if first && !p.stream && len(fresh) == 0 {
		_, err := fmt.Fprintf(p.out, "No transitions recorded for %s yet.\n", cluster)
		return err
	}
	if !first && len(fresh) == 0 {
		return nil
	}
	t := timeline.NewTable(timeline.Options{Age: p.opts.Age, Now: p.opts.Now()})
	if gapTo > 0 {
		why := "dropped from status.history unseen"
		if first {
			why = "no longer in status.history"
		}
		t.Gap(gapFrom, gapTo, why)
	}
	for _, e := range fresh {
		t.Add(timeline.FromHistory(e))
		p.last = uint64(e.Seq)
	}
	var err error
	if first {
		_, err = t.WriteTo(p.out)
	} else {
		_, err = t.WriteRowsTo(p.out)
	}
	if err == nil && gapTo > 0 && !p.stream {
		_, err = fmt.Fprintf(p.out, "Older transitions are in the operator's journal: kubectl valkey history %s -n %s --full\n", vc.Name, vc.Namespace)
	}
	return err
}

func (p *printer) encode(cluster string, fresh []v1beta1.HistoryEntry, first bool, gapFrom, gapTo uint64) error {
	if len(fresh) > 0 {
		p.last = uint64(fresh[len(fresh)-1].Seq)
	}
	if !p.stream {
		if fresh == nil {
			fresh = []v1beta1.HistoryEntry{}
		}
		return output.Encode(p.out, fresh, p.opts.Format)
	}
	if gapTo > 0 && !first {
		fmt.Fprintf(p.notes, "%s: %s\n", cluster, timeline.GapText(gapFrom, gapTo, "dropped from status.history unseen"))
	}
	for _, e := range fresh {
		if p.opts.Format == output.YAML {
			if _, err := io.WriteString(p.out, "---\n"); err != nil {
				return err
			}
		}
		if err := output.Encode(p.out, e, p.opts.Format); err != nil {
			return err
		}
	}
	return nil
}
