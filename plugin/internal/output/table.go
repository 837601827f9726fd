package output

import (
	"bytes"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// Table is a table of text cells with a header row, printed with aligned columns as kubectl
// prints them (three spaces between columns, no trailing spaces).
//
// Besides rows it holds spanning lines (Span), such as the marker of transitions missing
// from a journal. A plain line in a tabwriter would end the block of lines whose columns it
// aligns, so rows above and below it would be aligned separately; instead each spanning line
// is written as a row of empty cells, which keeps the columns contiguous, and replaced by its
// text after alignment.
type Table struct {
	header []string
	rows   []tableRow
	// minWidths pad cells, so that tables printed one after another (the batches of a
	// watch) line up as long as their cells fit.
	minWidths []int
}

type tableRow struct {
	cells []string
	span  string
	// isSpan tells a spanning line from a row (a spanning line may be empty).
	isSpan bool
}

// NewTable starts a table with these column headers.
func NewTable(header ...string) *Table {
	return &Table{header: header}
}

// Row adds a row. Missing cells are empty and extra cells are dropped, so that every row
// has the header's columns. Tabs and line breaks in a cell (a multi-line message) become
// spaces: they would break the table.
func (t *Table) Row(cells ...string) {
	row := make([]string, len(t.header))
	for i := range row {
		if i < len(cells) {
			row[i] = oneLine(cells[i])
		}
	}
	t.rows = append(t.rows, tableRow{cells: row})
}

// Span adds a line printed as is across the columns.
func (t *Table) Span(text string) {
	t.rows = append(t.rows, tableRow{span: oneLine(text), isSpan: true})
}

// MinWidths sets the least width of each column (0: as wide as its cells).
func (t *Table) MinWidths(widths ...int) { t.minWidths = widths }

// Len is the number of rows and spanning lines.
func (t *Table) Len() int { return len(t.rows) }

// WriteTo writes the header and the rows.
func (t *Table) WriteTo(w io.Writer) (int64, error) { return t.write(w, true) }

// WriteRowsTo writes the rows without the header line, aligned as WriteTo aligns them (the
// header's widths count): for rows that continue a table printed before.
func (t *Table) WriteRowsTo(w io.Writer) (int64, error) { return t.write(w, false) }

func (t *Table) write(w io.Writer, withHeader bool) (int64, error) {
	var aligned bytes.Buffer
	tw := tabwriter.NewWriter(&aligned, 0, 8, 3, ' ', 0)
	t.writeCells(tw, t.header)
	for _, r := range t.rows {
		if r.isSpan {
			t.writeCells(tw, make([]string, len(t.header)))
			continue
		}
		t.writeCells(tw, r.cells)
	}
	if err := tw.Flush(); err != nil {
		return 0, err
	}
	lines := strings.Split(strings.TrimSuffix(aligned.String(), "\n"), "\n")
	var out strings.Builder
	for i, line := range lines {
		if i == 0 && !withHeader {
			continue
		}
		// Line 0 is the header; row i-1 is on line i.
		if i > 0 && t.rows[i-1].isSpan {
			line = t.rows[i-1].span
		}
		out.WriteString(strings.TrimRight(line, " "))
		out.WriteByte('\n')
	}
	n, err := io.WriteString(w, out.String())
	return int64(n), err
}

func (t *Table) writeCells(w io.Writer, cells []string) {
	padded := make([]string, len(cells))
	for i, c := range cells {
		padded[i] = c
		// The last column is never padded: it would only add trailing spaces.
		if i < len(t.minWidths) && i < len(cells)-1 {
			if missing := t.minWidths[i] - utf8.RuneCountInString(c); missing > 0 {
				padded[i] += strings.Repeat(" ", missing)
			}
		}
	}
	_, _ = io.WriteString(w, strings.Join(padded, "\t")+"\n")
}

var flattener = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ")

func oneLine(s string) string { return flattener.Replace(s) }
