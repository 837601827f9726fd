package reconcile

import (
	"context"
	"errors"
	"testing"

	"github.com/valkey-fsm/valkey-operator/apis/v1beta1"
)

// A store without a credentials Secret (v1beta1's default credential chain) is refused with a
// reason, before anything is read or sent: the chain is not implemented yet.
func TestAStoreWithoutCredentialsIsRefusedWithAReason(t *testing.T) {
	_, err := storeOf(context.Background(), nil, "ns", v1beta1.BackupStore{Bucket: "b"})
	if !errors.Is(err, errNoCredentialsSecret) {
		t.Fatalf("a store without credentials: %v, want the refusal", err)
	}
}
