package output

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"sigs.k8s.io/yaml"
)

// Format is the value of a verb's -o flag.
type Format string

// The formats every verb accepts. Text is for people; JSON and YAML are for scripts and keep
// every field, including the ones text leaves out.
const (
	Text Format = "text"
	JSON Format = "json"
	YAML Format = "yaml"
)

// Formats lists the accepted values in the order the help text shows them.
var Formats = []Format{Text, JSON, YAML}

// String implements pflag.Value.
func (f *Format) String() string {
	if *f == "" {
		return string(Text)
	}
	return string(*f)
}

// Set implements pflag.Value, so that a misspelt -o fails while the flags are parsed,
// before anything is read from the cluster.
func (f *Format) Set(s string) error {
	for _, known := range Formats {
		if Format(s) == known {
			*f = known
			return nil
		}
	}
	names := make([]string, len(Formats))
	for i, known := range Formats {
		names[i] = string(known)
	}
	return fmt.Errorf("unknown output format %q: use one of %s", s, strings.Join(names, ", "))
}

// Type implements pflag.Value (the word in the help text).
func (f *Format) Type() string { return "format" }

// Encode writes v as one JSON or YAML document. JSON is indented as kubectl indents it, but
// without HTML escaping: messages such as "cache-1 -> cache-2" stay readable. YAML goes
// through JSON (sigs.k8s.io/yaml) so that both formats use the API's json field names and
// agree on every value.
func Encode(w io.Writer, v any, f Format) error {
	switch f {
	case JSON:
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "    ")
		return enc.Encode(v)
	case YAML:
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	default:
		return fmt.Errorf("format %q is not an encoding", f)
	}
}

// AddFlag registers -o/--output on a verb that reads: every such verb takes the same three
// formats under the same name, as kubectl's own verbs do, so that -o never means anything
// else (a file, a column set) on one verb only.
func AddFlag(fs *pflag.FlagSet, f *Format) {
	if *f == "" {
		*f = Text
	}
	fs.VarP(f, "output", "o", "Output format: text, json or yaml")
}
