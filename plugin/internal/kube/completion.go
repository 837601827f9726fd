package kube

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// completionTimeout bounds a completion's API call: a shell waiting on an unreachable API
// server is worse than no suggestion.
const completionTimeout = 5 * time.Second

// CompleteClusterNames is the ValidArgsFunction of the verbs whose one argument is a
// ValkeyCluster: the names of the ValkeyClusters in the namespace the flags select (-n and
// --kubeconfig typed before the TAB count), each with its state as description.
func (f *Flags) CompleteClusterNames(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	clients, err := f.NewClients()
	if err != nil {
		cobra.CompDebugln("kubectl-valkey: "+err.Error(), true)
		return nil, cobra.ShellCompDirectiveError
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, completionTimeout)
	defer cancel()
	list, err := ClusterResource(clients.Dynamic, clients.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		cobra.CompDebugln("kubectl-valkey: "+err.Error(), true)
		return nil, cobra.ShellCompDirectiveError
	}
	var names []cobra.Completion
	for _, u := range list.Items {
		if !strings.HasPrefix(u.GetName(), toComplete) {
			continue
		}
		state, _, _ := unstructured.NestedString(u.Object, "status", "state")
		if state == "" {
			names = append(names, u.GetName())
			continue
		}
		names = append(names, cobra.CompletionWithDesc(u.GetName(), state))
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
