package backup

import (
	"errors"
	"fmt"
)

// LZF (Valkey's lzf_d) as an RDB file holds it: a block of clen bytes that expands to ulen.
// Valkey allocates ulen before it expands a block and stops the server when the block does not
// expand to exactly ulen, so both are checked before a node sees the file.

// lzfMaxExpansion bounds how far a block expands: a literal run never grows, and the longest
// back reference (3 bytes) stands for 7+255+2 = 264 bytes, 88 times its size. A block that
// claims more is refused before anything is allocated for it.
const lzfMaxExpansion = 88

var errLZF = errors.New("corrupt LZF data")

// lzfDecompress expands an LZF block to ulen bytes, never past ulen.
func lzfDecompress(in []byte, ulen uint64) ([]byte, error) {
	if ulen > uint64(len(in))*lzfMaxExpansion {
		return nil, fmt.Errorf("%w: %d bytes claim to expand to %d", errLZF, len(in), ulen)
	}
	out := make([]byte, 0, ulen)
	for i := 0; i < len(in); {
		ctrl := int(in[i])
		i++
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			n := ctrl + 1
			if i+n > len(in) || uint64(len(out)+n) > ulen {
				return nil, fmt.Errorf("%w: a literal run at byte %d goes past the block or its length", errLZF, i-1)
			}
			out = append(out, in[i:i+n]...)
			i += n
			continue
		}
		n := ctrl >> 5 // a back reference
		if n == 7 {
			if i >= len(in) {
				return nil, fmt.Errorf("%w: the block ends inside a back reference", errLZF)
			}
			n += int(in[i])
			i++
		}
		if i >= len(in) {
			return nil, fmt.Errorf("%w: the block ends inside a back reference", errLZF)
		}
		ref := len(out) - (ctrl&0x1f)<<8 - int(in[i]) - 1
		i++
		if ref < 0 || uint64(len(out)+n+2) > ulen {
			return nil, fmt.Errorf("%w: a back reference at byte %d reaches before the start or past the length", errLZF, i-2)
		}
		for j := 0; j < n+2; j++ {
			out = append(out, out[ref+j])
		}
	}
	if uint64(len(out)) != ulen {
		return nil, fmt.Errorf("%w: expands to %d bytes, claims %d", errLZF, len(out), ulen)
	}
	return out, nil
}

// lzfCheck reads past an LZF block of clen bytes in x and checks that it expands to exactly
// ulen bytes, as lzfDecompress would, without expanding it: only the expanded length is kept.
func lzfCheck(x *rdbReader, clen, ulen uint64) error {
	end := x.off + int64(clen)
	var out uint64
	for x.off < end {
		if err := x.alive(); err != nil {
			return err
		}
		ctrl, err := x.byte()
		if err != nil {
			return err
		}
		if ctrl < 32 { // a literal run of ctrl+1 bytes
			n := uint64(ctrl) + 1
			if x.off+int64(n) > end || out+n > ulen {
				return fmt.Errorf("%w: a literal run at byte %d goes past the block or its length", errLZF, x.off-1)
			}
			if err := x.discard(n, "an LZF literal run"); err != nil {
				return err
			}
			out += n
			continue
		}
		n := uint64(ctrl >> 5) // a back reference
		if n == 7 {
			if x.off >= end {
				return fmt.Errorf("%w: the block ends inside a back reference", errLZF)
			}
			b, err := x.byte()
			if err != nil {
				return err
			}
			n += uint64(b)
		}
		if x.off >= end {
			return fmt.Errorf("%w: the block ends inside a back reference", errLZF)
		}
		lo, err := x.byte()
		if err != nil {
			return err
		}
		back := uint64(ctrl&0x1f)<<8 | uint64(lo)
		if back >= out || out+n+2 > ulen {
			return fmt.Errorf("%w: a back reference at byte %d reaches before the start or past the length", errLZF, x.off-2)
		}
		out += n + 2
	}
	if out != ulen {
		return fmt.Errorf("%w: expands to %d bytes, claims %d", errLZF, out, ulen)
	}
	return nil
}
