package valkey

import (
	"bytes"
	"context"
	"encoding/binary"
	"strings"
	"testing"
)

// TestTheApplicationCannotRestoreACraftedPayload: on a node configured as the operator renders
// it, the application user's RESTORE of a payload whose checksum is right but whose hash holds
// one field twice (a structure Valkey never writes) is refused, while a genuine payload is
// restored. Without deep sanitization the server takes the crafted one.
func TestTheApplicationCannotRestoreACraftedPayload(t *testing.T) {
	var sanitize string
	for _, l := range strings.Split(RenderConfig(ConfigInput{}), "\n") {
		if strings.HasPrefix(l, "sanitize-dump-payload") {
			sanitize = l + "\n"
		}
	}
	s := startServerWith(t, "127.78.17.1", "save \"\"\nappendonly no\n"+sanitize)
	p := newTestPool(t)
	ctx := context.Background()
	app := openPrimary(t, p, s)
	if err := app.Do(ctx, app.B().Hset().Key("h").FieldValue().FieldValue("f", "1").FieldValue("g", "2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	dump, err := app.Do(ctx, app.B().Dump().Key("h").Build()).AsBytes()
	if err != nil {
		t.Fatal(err)
	}
	// The listpack's entry "g" (a 1-byte string: 0x81 'g', back-length 2) becomes a second "f".
	entry := []byte{0x81, 'g', 0x02}
	if bytes.Count(dump, entry) != 1 {
		t.Fatalf("the DUMP of a small hash is not the listpack this test knows: %x", dump)
	}
	crafted := bytes.Replace(dump, entry, []byte{0x81, 'f', 0x02}, 1)
	body := crafted[:len(crafted)-8]
	binary.LittleEndian.PutUint64(crafted[len(crafted)-8:], crc64Jones(body))

	restore := func(key string, payload []byte) error {
		return app.Do(ctx, app.B().Restore().Key(key).Ttl(0).SerializedValue(string(payload)).Build()).Error()
	}
	if err := restore("genuine", dump); err != nil {
		t.Fatalf("the application's RESTORE of a genuine payload: %v", err)
	}
	err = restore("crafted", crafted)
	if err == nil {
		t.Fatal("the application's RESTORE of a crafted payload was taken (no deep sanitization)")
	}
	if !strings.Contains(err.Error(), "Bad data format") {
		t.Errorf("the crafted payload was refused for another reason: %v", err)
	}
	if n, err := app.Do(ctx, app.B().Exists().Key("crafted").Build()).AsInt64(); err != nil || n != 0 {
		t.Errorf("the crafted key exists after the refusal (%d, %v)", n, err)
	}
}

// crc64Jones is the checksum of a DUMP payload: CRC-64/Jones (reflected, polynomial
// 0xad93d23594c935a9, initial value 0, no final xor), bit by bit.
func crc64Jones(p []byte) uint64 {
	var crc uint64
	for _, b := range p {
		crc ^= uint64(b)
		for range 8 {
			if crc&1 == 1 {
				crc = crc>>1 ^ 0x95ac9329ac4bc9b5
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}
