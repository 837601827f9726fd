package v1beta1

import "strconv"

// HumanSize formats a byte count for status.sizeHuman: binary units (KiB, MiB, GiB, TiB,
// PiB, EiB: what a PersistentVolumeClaim's Gi means) with at most one decimal, rounded
// down so that a backup never reads bigger than it is: 1536 is "1.5 KiB", 1024 "1 KiB",
// 1023 "1023 B".
func HumanSize(bytes int64) string {
	if bytes < 1024 {
		return strconv.FormatInt(bytes, 10) + " B"
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	unit, scale := 0, int64(1024)
	for unit+1 < len(units) && bytes/scale >= 1024 {
		unit++
		scale *= 1024
	}
	// In uint64: the remainder of an EiB (below 2^60) times ten does not fit an int64.
	whole, tenths := bytes/scale, int64(uint64(bytes%scale)*10/uint64(scale))
	if tenths == 0 {
		return strconv.FormatInt(whole, 10) + " " + units[unit]
	}
	return strconv.FormatInt(whole, 10) + "." + strconv.FormatInt(tenths, 10) + " " + units[unit]
}
