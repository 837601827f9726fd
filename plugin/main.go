package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/valkey-fsm/valkey-operator/plugin/backup"
	"github.com/valkey-fsm/valkey-operator/plugin/breakglass"
	"github.com/valkey-fsm/valkey-operator/plugin/certificate"
	"github.com/valkey-fsm/valkey-operator/plugin/cli"
	"github.com/valkey-fsm/valkey-operator/plugin/failover"
	"github.com/valkey-fsm/valkey-operator/plugin/hibernate"
	"github.com/valkey-fsm/valkey-operator/plugin/history"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/exitcode"
	"github.com/valkey-fsm/valkey-operator/plugin/internal/kube"
	"github.com/valkey-fsm/valkey-operator/plugin/replay"
	"github.com/valkey-fsm/valkey-operator/plugin/report"
	"github.com/valkey-fsm/valkey-operator/plugin/reshard"
	"github.com/valkey-fsm/valkey-operator/plugin/restart"
	"github.com/valkey-fsm/valkey-operator/plugin/rotate"
	"github.com/valkey-fsm/valkey-operator/plugin/simulate"
	"github.com/valkey-fsm/valkey-operator/plugin/status"
	"github.com/valkey-fsm/valkey-operator/plugin/version"
)

func main() {
	os.Exit(run())
}

// run is main without os.Exit, so that the signal handler is released before exiting.
func run() int {
	// Ctrl-C cancels the context: a --watch ends cleanly, anything else stops its request.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand(time.Now).ExecuteContext(ctx); err != nil {
		// A verb that printed its own diagnostics asks for its exit status only.
		var code exitcode.Code
		if errors.As(err, &code) {
			return int(code)
		}
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// newRootCommand builds the command tree. now is the clock of every verb, so that tests can
// fix it.
func newRootCommand(now func() time.Time) *cobra.Command {
	flags := kube.NewFlags()
	root := &cobra.Command{
		Use:   "kubectl-valkey",
		Short: "Inspect ValkeyClusters managed by the valkey-operator",
		Long: `kubectl valkey shows what the valkey-operator's state machine recorded for a
ValkeyCluster: its state, nodes and conditions (status) and its state transitions (history).
The other verbs write intent for the operator to carry out: a switchover (failover), a rolling
restart (restart), a shard count and its slot plan (reshard), a backup now (backup), a password
rotation without a restart (rotate), every pod stopped with the data kept and started again
(hibernate, wake). force-bootstrap and force-failover write the two decisions that give up
data (bootstrap from one pod's data; fail over without pods that may hold acknowledged writes),
after showing what is lost and asking for the cluster's name. certificate shows the certificate each pod serves; cli opens valkey-cli on
a node without the password on any command line; report collects a support bundle with every
secret redacted. simulate and replay need no cluster: they run the state machine against a
simulated world, or against a recorded journal.`,
		Annotations: map[string]string{
			// Help and usage then say "kubectl valkey", as the user typed it.
			cobra.CommandDisplayNameAnnotation: "kubectl valkey",
		},
		// Usage after a failed API call hides the error; errors are printed once, by main.
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags.AddFlags(root.PersistentFlags())
	root.AddCommand(
		status.NewCmd(flags, now),
		history.NewCmd(flags, now),
		failover.NewCmd(flags),
		restart.NewCmd(flags, now),
		hibernate.NewHibernateCmd(flags),
		hibernate.NewWakeCmd(flags),
		reshard.NewCmd(flags),
		breakglass.NewBootstrapCmd(flags),
		breakglass.NewFailoverCmd(flags),
		backup.NewCmd(flags, now),
		rotate.NewCmd(flags, now),
		certificate.NewCmd(flags, now),
		cli.NewCmd(flags),
		report.NewCmd(flags, now),
		version.NewCmd(flags),
		simulate.NewCmd(),
		replay.NewCmd(),
	)
	return root
}
