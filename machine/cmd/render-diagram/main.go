// Command render-diagram prints docs/state-machine.md, generated from the machine's transition
// table: `go run ./machine/cmd/render-diagram > docs/state-machine.md` (make generate).
package main

import (
	"fmt"
	"os"

	"github.com/valkey-fsm/valkey-operator/machine"
)

func main() {
	doc, err := machine.RenderMarkdown()
	if err != nil {
		fmt.Fprintln(os.Stderr, "render-diagram:", err)
		os.Exit(1)
	}
	fmt.Print(doc)
}
