package dbsources

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/visorhq/visor/services/injection"
)

// fenceTag is the tag database text is fenced in: rows and names come from
// whoever wrote the data, so the model reads them as data.
const fenceTag = "db_result"

// fenced renders v as JSON inside a db_result fence naming the source and
// the injection-scan flags of text, the answer's strings, and returns the
// flags. Every "</" inside the JSON is written "<\/" (the same string to
// a JSON reader), so the data cannot close the fence early.
func fenced(source string, v any, text string) (string, []string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the scan must see the text as written
	if err := enc.Encode(v); err != nil {
		return "", nil, err
	}
	body := strings.TrimSuffix(buf.String(), "\n")
	flags := scan(text)
	if strings.Contains(strings.ToLower(body), "</"+fenceTag) && !contains(flags, string(injection.FenceEscape)) {
		flags = append(flags, string(injection.FenceEscape))
	}
	body = strings.ReplaceAll(body, "</", `<\/`)
	f := "none"
	if len(flags) > 0 {
		f = strings.Join(flags, ",")
	}
	return "<" + fenceTag + " source=\"" + source + "\" injection_flags=\"" + f + "\">\n" + body + "\n</" + fenceTag + ">", flags, nil
}

// answerText is the text of an answer the injection rules need to read:
// each distinct string value once (numbers, dates and the like carry no
// words), one per line.
func answerText(a Answer) string {
	seen := map[string]bool{}
	var b strings.Builder
	add := func(s string) {
		if s == "" || seen[s] || strings.Trim(s, "0123456789-+.:TZ eE") == "" {
			return
		}
		seen[s] = true
		b.WriteString(s)
		b.WriteByte('\n')
	}
	for _, c := range a.Columns {
		add(c.Name)
	}
	for _, row := range a.Rows {
		for _, v := range row {
			switch x := v.(type) {
			case string:
				add(x)
			case json.RawMessage:
				add(string(x))
			}
		}
	}
	return b.String()
}

// schemaText is the text of a described schema: its distinct names and
// types.
func schemaText(sc Schema) string {
	var a Answer
	for _, t := range sc.Tables {
		row := []any{t.Schema, t.Name}
		for _, c := range t.Columns {
			row = append(row, c.Name, c.Type)
		}
		a.Rows = append(a.Rows, row)
	}
	return answerText(a)
}

// scan runs the injection rules over all of text, in windows of the
// scanner's size that overlap by a little, so a long answer is scanned to
// its end.
func scan(text string) []string {
	flags := []string{}
	const overlap = 512
	for start := 0; ; start += injection.MaxScan - overlap {
		end := min(start+injection.MaxScan, len(text))
		for _, r := range injection.Scan(text[start:end]) {
			if !contains(flags, string(r)) {
				flags = append(flags, string(r))
			}
		}
		if end == len(text) {
			return flags
		}
	}
}
