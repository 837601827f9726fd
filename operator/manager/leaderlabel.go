package manager

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// LabelLeader marks the operator pod that leads. The chart's journal Service selects it: every
// replica keeps its own journal, and the leader's is the current one (a new leader backfills
// what it missed from status.history), so the API server's journal requests go there.
const LabelLeader = "valkey.fsm.dev/operator-leader"

// leaderLabel sets LabelLeader on the operator's own pod once this replica leads (a manager
// Runnable that needs leader election), and clears it when the process starts: a replica that
// restarts is a follower until it wins the lease again. Without POD_NAME and POD_NAMESPACE
// (an operator outside a pod) it does nothing.
type leaderLabel struct {
	cs             kubernetes.Interface
	namespace, pod string
	log            logr.Logger
}

// set sets or clears the label and returns the pod as it is now.
func (l *leaderLabel) set(ctx context.Context, leader bool) (*corev1.Pod, error) {
	var value any // nil removes the label
	if leader {
		value = "true"
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]any{LabelLeader: value}}})
	if err != nil {
		return nil, err
	}
	pod, err := l.cs.CoreV1().Pods(l.namespace).Patch(ctx, l.pod, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("labelling the operator's pod %s/%s (leader=%v): %w", l.namespace, l.pod, leader, err)
	}
	return pod, nil
}

// Start runs once this replica leads.
func (l *leaderLabel) Start(ctx context.Context) error {
	if _, err := l.set(ctx, true); err != nil {
		// The journal Service then misses the leader: reported, and nothing else stops.
		l.log.Error(err, "the journal Service will not find this leader")
		return nil
	}
	l.log.Info("leading: labelled this pod", "pod", l.pod, "label", LabelLeader)
	return nil
}

// NeedLeaderElection is true: only the leader labels itself.
func (l *leaderLabel) NeedLeaderElection() bool { return true }
