package report

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
)

// bundle is the archive being written: every file redacted on its way in, and a record of
// each part for the summary.
type bundle struct {
	tw     *tar.Writer
	gz     *gzip.Writer
	dir    string
	now    time.Time
	redact *redactor
	parts  []part
	// notes are what the summary says besides the parts (Secrets that could not be read).
	notes []string
}

// part is one thing the report tried to collect.
type part struct {
	name string
	// err is why it could not be collected (nil: it is in the archive).
	err error
}

func newBundle(w io.Writer, dir string, now time.Time) *bundle {
	gz := gzip.NewWriter(w)
	return &bundle{tw: tar.NewWriter(gz), gz: gz, dir: dir, now: now, redact: newRedactor(nil)}
}

// add writes a file of the report, redacted.
func (b *bundle) add(name string, content []byte) error {
	content = b.redact.redact(content)
	hdr := &tar.Header{Name: path.Join(b.dir, name), Mode: 0o644, Size: int64(len(content)), ModTime: b.now, Typeflag: tar.TypeReg}
	if err := b.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := b.tw.Write(content)
	return err
}

// collected records a part: in the archive when err is nil, else noted beside where it would
// be (name.error) with why. Only a failure to write the archive itself is returned.
func (b *bundle) collected(name string, content []byte, err error) error {
	if err != nil {
		b.parts = append(b.parts, part{name: name, err: err})
		return b.add(name+".error", []byte(err.Error()+"\n"))
	}
	b.parts = append(b.parts, part{name: name})
	return b.add(name, content)
}

// summary is what was collected and what was not, for the archive and the terminal.
func (b *bundle) summary() []byte {
	var ok, failed int
	var buf bytes.Buffer
	for _, p := range b.parts {
		if p.err == nil {
			ok++
		} else {
			failed++
		}
	}
	fmt.Fprintf(&buf, "%d part(s) collected, %d not collected.\n", ok, failed)
	for _, p := range b.parts {
		if p.err == nil {
			fmt.Fprintf(&buf, "  ok      %s\n", p.name)
		}
	}
	for _, p := range b.parts {
		if p.err != nil {
			// One line per part: the archive's .error file has the whole message.
			first, _, _ := strings.Cut(p.err.Error(), "\n")
			fmt.Fprintf(&buf, "  missing %s: %s\n", p.name, first)
		}
	}
	for _, n := range b.notes {
		fmt.Fprintf(&buf, "note: %s\n", n)
	}
	return b.redact.redact(buf.Bytes())
}

// close writes the summary and ends the archive.
func (b *bundle) close() error {
	if err := b.add("summary.txt", b.summary()); err != nil {
		return err
	}
	if err := b.tw.Close(); err != nil {
		return err
	}
	return b.gz.Close()
}
