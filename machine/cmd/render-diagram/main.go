// Command render-diagram prints docs/state-machine.md, generated from the machine's transition
// table: `go run ./machine/cmd/render-diagram > docs/state-machine.md` (make generate). With
// -readme FILE it rewrites, in place, the diagram that follows the marker line in FILE with the
// overview (the moves between states; the full diagram is on the page).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/valkey-fsm/valkey-operator/machine"
)

func main() {
	readme := flag.String("readme", "", "rewrite the generated diagram in this file instead of printing the page")
	flag.Parse()
	if err := run(*readme); err != nil {
		fmt.Fprintln(os.Stderr, "render-diagram:", err)
		os.Exit(1)
	}
}

func run(readme string) error {
	if readme == "" {
		doc, err := machine.RenderMarkdown()
		if err != nil {
			return err
		}
		fmt.Print(doc)
		return nil
	}
	diagram := machine.OverviewDiagram()
	old, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	doc, err := machine.WithDiagram(string(old), diagram)
	if err != nil {
		return fmt.Errorf("%s: %w", readme, err)
	}
	return os.WriteFile(readme, []byte(doc), 0o644)
}
