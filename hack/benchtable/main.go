// Command benchtable keeps the measured figures in one place. docs/measurements.json holds
// each figure with its goal, the benchmark and metric it comes from, the date and the machine
// it was measured on. `-record FILE,...` (make bench) updates every figure whose benchmark ran
// in those `go test -bench` outputs with the median over runs, today's date and this machine;
// `-doc PAGE` (make generate) renders the table between the page's markers. Pages state no
// figure by hand: they link to docs/measurements.md, so two pages cannot disagree.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	results := flag.String("results", "docs/measurements.json", "the figures")
	doc := flag.String("doc", "", "page whose table is rewritten between its markers")
	record := flag.String("record", "", "comma-separated go test -bench outputs to take figures from")
	flag.Parse()
	if err := run(*results, *doc, *record); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(results, doc, record string) error {
	set, err := load(results)
	if err != nil {
		return err
	}
	if record != "" {
		runs, machine, err := parseOutputs(strings.Split(record, ","))
		if err != nil {
			return err
		}
		updated := set.record(runs, time.Now().UTC().Format(time.DateOnly), machine)
		for _, id := range updated {
			fmt.Fprintf(os.Stderr, "benchtable: %s measured again\n", id)
		}
		if err := set.save(results); err != nil {
			return err
		}
	}
	if doc != "" {
		return splice(doc, set.render())
	}
	return nil
}
