package backup

// Valkey's RDB checksum is CRC-64/Jones (reflected, polynomial 0xad93d23594c935a9, initial value
// 0, no final xor). hash/crc64 inverts the value before and after, which Valkey does not: the
// table-driven update is written here.

const jonesReflected = 0x95ac9329ac4bc9b5

var jonesTable = func() (t [256]uint64) {
	for i := range t {
		crc := uint64(i)
		for j := 0; j < 8; j++ {
			if crc&1 == 1 {
				crc = crc>>1 ^ jonesReflected
			} else {
				crc >>= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// crc64Jones continues crc over p.
func crc64Jones(crc uint64, p []byte) uint64 {
	for _, b := range p {
		crc = jonesTable[byte(crc)^b] ^ crc>>8
	}
	return crc
}
