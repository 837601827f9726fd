package shared

import (
	"fmt"
	"strings"

	"github.com/valkey-fsm/valkey-operator/machine"
)

// RangesText writes slot ranges as users read them: 0-5460,5462.
func RangesText(slots []machine.SlotRange) string {
	var ranges []string
	for _, r := range slots {
		if r.Start == r.End {
			ranges = append(ranges, fmt.Sprint(r.Start))
		} else {
			ranges = append(ranges, fmt.Sprintf("%d-%d", r.Start, r.End))
		}
	}
	return strings.Join(ranges, ",")
}
