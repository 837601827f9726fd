package main

import (
	"slices"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// readingVerbs are the verbs that print what they read: each takes -o text|json|yaml.
var readingVerbs = []string{"status", "history", "reshard", "certificate", "version", "report"}

// No verb's own flag has the name or the shorthand of one of the root's persistent flags
// (kubectl's connection flags: --user, --cluster, --context, -n, -s ...): cobra would let the
// verb's flag win there, so that a flag every kubectl user knows would mean something else on
// one verb. And -o/--output is the output format wherever it appears, as on kubectl's verbs.
func TestNoVerbShadowsKubectlsFlags(t *testing.T) {
	root := newRootCommand(clock)
	global := root.PersistentFlags()
	var walk func(*cobra.Command)
	walk = func(cmd *cobra.Command) {
		cmd.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if g := global.Lookup(f.Name); g != nil {
				t.Errorf("%s --%s shadows kubectl's --%s (%s)", cmd.CommandPath(), f.Name, g.Name, g.Usage)
			}
			if f.Shorthand != "" {
				if g := global.ShorthandLookup(f.Shorthand); g != nil {
					t.Errorf("%s -%s shadows kubectl's -%s (--%s)", cmd.CommandPath(), f.Shorthand, g.Shorthand, g.Name)
				}
			}
			if (f.Name == "output" || f.Shorthand == "o") && (f.Name != "output" || f.Shorthand != "o" || f.Value.Type() != "format") {
				t.Errorf("%s --%s/-%s (%s) is not the output format", cmd.CommandPath(), f.Name, f.Shorthand, f.Value.Type())
			}
		})
		for _, c := range cmd.Commands() {
			walk(c)
		}
	}
	walk(root)
	for _, name := range []string{"user", "cluster", "context", "namespace", "kubeconfig", "server"} {
		if global.Lookup(name) == nil {
			t.Errorf("the root lacks kubectl's --%s: the test would check nothing", name)
		}
	}
}

// Every verb that reads takes -o json and -o yaml (and text, the default).
func TestEveryReadingVerbTakesOutputFormats(t *testing.T) {
	root := newRootCommand(clock)
	for _, name := range readingVerbs {
		cmd, _, err := root.Find([]string{name})
		if err != nil || cmd.Name() != name {
			t.Errorf("no verb %s: %v", name, err)
			continue
		}
		f := cmd.Flags().Lookup("output")
		if f == nil || f.Shorthand != "o" || f.Value.Type() != "format" {
			t.Errorf("%s has no -o/--output format flag: %+v", name, f)
			continue
		}
		for _, v := range []string{"json", "yaml", "text"} {
			if err := f.Value.Set(v); err != nil {
				t.Errorf("%s -o %s: %v", name, v, err)
			}
		}
	}
	// The list is every verb that prints what it read: the ones that only write intent, open a
	// session or complete are the rest, and so are simulate and replay, which read no cluster
	// and print the simulator's and the replay's own reports.
	writers := []string{"failover", "restart", "hibernate", "wake", "backup", "rotate", "cli", "force-bootstrap", "force-failover", "completion", "help", "simulate", "replay"}
	for _, cmd := range root.Commands() {
		if !slices.Contains(readingVerbs, cmd.Name()) && !slices.Contains(writers, cmd.Name()) {
			t.Errorf("verb %s is in neither list: does it read (then -o) or write?", cmd.Name())
		}
	}
}
