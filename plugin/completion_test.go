package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// verbsTakingName are the verbs whose one argument is a ValkeyCluster.
var verbsTakingName = []string{"status", "history", "failover", "restart", "hibernate", "wake", "reshard", "backup", "rotate", "certificate", "cli", "report", "force-bootstrap", "force-failover"}

// complete asks the command tree for completions as a shell does (cobra's __complete, with the
// word being completed last) and returns the completions and the directive line.
func complete(t *testing.T, words ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	root := newRootCommand(clock)
	// --kubeconfig before the words: the last word is the one being completed.
	root.SetArgs(append([]string{"__complete", words[0], "--kubeconfig", shared.kubeconfig}, words[1:]...))
	var stdout, stderr syncBuffer
	root.SetOut(&stdout)
	root.SetErr(&stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		t.Fatalf("__complete %v: %v\n%s", words, err, stderr.String())
	}
	out := stdout.String()
	i := strings.LastIndex(strings.TrimSuffix(out, "\n"), "\n")
	return out[:i+1], out[i+1:]
}

// Every verb taking NAME completes the ValkeyClusters of the namespace -n selects, with their
// state, from the real API server: the completion is the request the plugin makes, not a list
// handed to it.
func TestClusterNamesComplete(t *testing.T) {
	ns := namespace(t, "completion")
	createCluster(t, ns, "cache")
	createCluster(t, ns, "cart")
	createCluster(t, ns, "sessions")
	writeStatus(t, ns, "cache", statusAfter(lifeOf))
	createCluster(t, namespace(t, "completion-other"), "catalog")

	for _, verb := range verbsTakingName {
		got, directive := complete(t, verb, "-n", ns, "ca")
		// 4 is ShellCompDirectiveNoFileComp: no file names offered instead.
		if got != "cache\tSteady\ncart\n" || directive != ":4\n" {
			t.Errorf("%s -n %s ca<TAB>: %q %q, want cache (Steady) and cart only", verb, ns, got, directive)
		}
		if got, _ := complete(t, verb, "-n", ns, ""); got != "cache\tSteady\ncart\nsessions\n" {
			t.Errorf("%s -n %s <TAB>: %q", verb, ns, got)
		}
		// NAME given: nothing more to complete.
		if got, _ := complete(t, verb, "-n", ns, "cache", ""); got != "" {
			t.Errorf("%s cache <TAB>: %q, want nothing", verb, got)
		}
	}
	if got, _ := complete(t, "status", "-n", "completion-other", ""); got != "catalog\n" {
		t.Errorf("in another namespace: %q", got)
	}
	// An API error offers nothing (1 is ShellCompDirectiveError), rather than hanging the shell.
	if got, directive := complete(t, "status", "--server", "https://127.0.0.1:1", ""); got != "" || directive != ":1\n" {
		t.Errorf("with an API server that does not answer: %q %q", got, directive)
	}
}

// The completion scripts are served for the shells kubectl's plugin completion supports.
func TestCompletionScripts(t *testing.T) {
	apiServer(t)
	for shell, want := range map[string]string{"bash": "__start_kubectl-valkey", "zsh": "#compdef kubectl-valkey", "fish": "complete -c kubectl-valkey"} {
		out, err := kubectlValkey(t, "completion", shell)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("completion %s: %v, output lacks %q", shell, err, want)
		}
	}
}
