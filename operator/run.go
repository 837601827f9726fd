package main

import (
	"fmt"
	"io"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/valkey-fsm/valkey-operator/operator/manager"
)

func init() {
	subcommands["run"] = runOperator
}

// runOperator is `valkey-operator run`: the operator itself.
func runOperator(args []string, _, stderr io.Writer) int {
	cfg, err := manager.ParseFlags(args)
	if err != nil {
		return 2
	}
	manager.SetMemoryLimit()
	if err := manager.Run(ctrl.SetupSignalHandler(), nil, cfg); err != nil {
		fmt.Fprintln(stderr, "valkey-operator:", err)
		return 1
	}
	return 0
}
