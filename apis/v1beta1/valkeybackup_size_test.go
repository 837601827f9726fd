package v1beta1

import (
	"math"
	"testing"
)

func TestHumanSize(t *testing.T) {
	for bytes, want := range map[int64]string{
		-1:                    "-1 B",
		0:                     "0 B",
		1023:                  "1023 B",
		1024:                  "1 KiB",
		1536:                  "1.5 KiB",
		1024*1024 - 1:         "1023.9 KiB",
		10 << 30:              "10 GiB",
		(3 << 30) + 1<<29:     "3.5 GiB",
		(2 << 40) - 1:         "1.9 TiB",
		math.MaxInt64:         "7.9 EiB",
		5 << 60:               "5 EiB",
		(1 << 50) + (1 << 49): "1.5 PiB",
	} {
		if got := HumanSize(bytes); got != want {
			t.Errorf("HumanSize(%d) = %q, want %q", bytes, got, want)
		}
	}
}
