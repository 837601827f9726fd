package backup

import (
	"encoding/binary"
	"errors"
	"testing"
)

// The check value of CRC-64/Jones as Valkey computes it (src/crc64.c's self-test).
func TestCRC64IsValkeys(t *testing.T) {
	if got := crc64Jones(0, []byte("123456789")); got != 0xe9c6d914c4b8d9ca {
		t.Fatalf("crc64(123456789) = %016x, want e9c6d914c4b8d9ca", got)
	}
}

// fakeRDB is a minimal well-formed RDB: a header, a body, the end opcode and the checksum.
func fakeRDB(header string, body []byte) []byte {
	b := append([]byte(header), body...)
	b = append(b, rdbEOF)
	return binary.LittleEndian.AppendUint64(b, crc64Jones(0, b))
}

func check(b []byte, chunk int) error {
	var c rdbCheck
	for len(b) > 0 {
		n := min(chunk, len(b))
		_, _ = c.Write(b[:n])
		b = b[n:]
	}
	return c.done()
}

func TestRDBCheck(t *testing.T) {
	good := fakeRDB("REDIS0011", []byte("\xfa\x09redis-ver\x058.0.1\xfe\x00\xfb\x01\x00\x00\x03key\x05value"))
	for _, chunk := range []int{1, 3, 8, 9, 1 << 20} {
		if err := check(good, chunk); err != nil {
			t.Fatalf("a good RDB in chunks of %d: %v", chunk, err)
		}
	}
	if err := check(fakeRDB("VALKEY080", []byte("\xfe\x00")), 5); err != nil {
		t.Fatalf("a Valkey 9 header: %v", err)
	}
	unchecked := append(append([]byte("REDIS0011\xfe\x00"), rdbEOF), make([]byte, 8)...)
	if err := check(unchecked, 4); err != nil {
		t.Fatalf("rdbchecksum no (a zero checksum): %v", err)
	}
	flipped := append([]byte(nil), good...)
	flipped[20] ^= 0x01
	truncated := good[:len(good)-5]
	noEOF := fakeRDB("REDIS0011", nil)
	noEOF[9] = 0xfe // the end opcode replaced: checksum still over the bytes, but no end
	for name, b := range map[string][]byte{
		"a flipped byte": flipped, "truncated": truncated, "no end opcode": noEOF,
		"not an RDB": []byte("HTTP/1.1 403 Forbidden\r\n\r\n<Error>AccessDenied</Error>"), "empty": nil,
	} {
		if err := check(b, 7); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want a failed check", name, err)
		}
	}
}
