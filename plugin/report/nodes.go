package report

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/nodecli"
)

// nodeCommandTimeout bounds one valkey-cli run: a node that does not answer is noted, and the
// report goes on with the next.
const nodeCommandTimeout = 30 * time.Second

// nodeCommand is what the report asks each node, as the operator's user (it may run INFO,
// ROLE, CONFIG GET and CLUSTER INFO/NODES; the application's user may not run CONFIG).
type nodeCommand struct {
	file string
	args []string
	// clusterOnly: only nodes of a Cluster topology answer it.
	clusterOnly bool
	// pairs: the answer is CONFIG GET's, a name and a value per line each, written as
	// valkey.conf writes them (one "name value" per line, sorted) so that the directives
	// holding passwords are recognised and redacted.
	pairs bool
}

var nodeCommands = []nodeCommand{
	{file: "info.txt", args: []string{"INFO", "everything"}},
	{file: "role.txt", args: []string{"ROLE"}},
	{file: "config.txt", args: []string{"CONFIG", "GET", "*"}, pairs: true},
	{file: "cluster-info.txt", args: []string{"CLUSTER", "INFO"}, clusterOnly: true},
	{file: "cluster-nodes.txt", args: []string{"CLUSTER", "NODES"}, clusterOnly: true},
}

// runNode runs one command with valkey-cli in the pod, authenticated as in the cli verb.
func runNode(ctx context.Context, ex nodecli.Exec, namespace string, t nodecli.Target, password string, c nodeCommand) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeCommandTimeout)
	defer cancel()
	var stdout, stderr bytes.Buffer
	argv := nodecli.Args(t, kube.UserOperator, password != "", c.args...)
	err := ex.Run(ctx, namespace, t.Pod, argv, password, nodecli.Streams{Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return nil, fmt.Errorf("valkey-cli %s in %s: %w: %s", strings.Join(c.args, " "), t.Pod, err, strings.TrimSpace(stderr.String()))
	}
	// valkey-cli exits 0 after a failed AUTH or a refused command: the answer says so.
	out := stdout.Bytes()
	if msg := strings.TrimSpace(stderr.String()); strings.Contains(msg, "AUTH failed") {
		return nil, fmt.Errorf("valkey-cli %s in %s: %s", strings.Join(c.args, " "), t.Pod, msg)
	}
	for _, refusal := range []string{"ERR", "NOAUTH", "WRONGPASS", "NOPERM"} {
		if bytes.HasPrefix(out, []byte(refusal+" ")) {
			return nil, fmt.Errorf("valkey-cli %s in %s: %s", strings.Join(c.args, " "), t.Pod, strings.TrimSpace(string(out)))
		}
	}
	if c.pairs {
		return configLines(out), nil
	}
	return out, nil
}

// configLines turns CONFIG GET's answer (name, value, name, value, ... one per line) into
// "name value" lines, sorted by name.
func configLines(out []byte) []byte {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	var directives []string
	for i := 0; i+1 < len(lines); i += 2 {
		directives = append(directives, lines[i]+" "+lines[i+1])
	}
	slices.Sort(directives)
	return []byte(strings.Join(directives, "\n") + "\n")
}
