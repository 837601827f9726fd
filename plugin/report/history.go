package report

import (
	"bytes"
	"context"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
	"github.com/valkey-fsm/valkey-operator/plugin/history"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/output"
)

// historyText is what kubectl valkey history prints: status.history, oldest first, with
// RFC 3339 times (an archive is read later; ages would be wrong by then).
func historyText(vc *v1beta1.ValkeyCluster, now func() time.Time) ([]byte, error) {
	var b bytes.Buffer
	err := history.Print(&b, vc, history.Options{Format: output.Text, Now: now})
	return b.Bytes(), err
}

// journal is what kubectl valkey history --full reads: every transition the operator
// journaled, as a table and as the operator's document. It needs get on the journal API, which
// not every user has; its error says what is missing.
func journal(ctx context.Context, core kubernetes.Interface, vc *v1beta1.ValkeyCluster, now func() time.Time) (text, doc []byte, err error) {
	raw, j, err := history.ReadJournal(ctx, core, vc.Namespace, vc.Name)
	if err != nil {
		return nil, nil, err
	}
	var t, d bytes.Buffer
	if err := history.PrintJournal(&t, raw, j, history.Options{Format: output.Text, Now: now}); err != nil {
		return nil, nil, err
	}
	if err := history.PrintJournal(&d, raw, j, history.Options{Format: output.JSON, Now: now}); err != nil {
		return nil, nil, err
	}
	return t.Bytes(), d.Bytes(), nil
}
