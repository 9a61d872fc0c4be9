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
// the injection-scan flags of the text inside, and returns the flags.
// Every "</" inside the JSON is written "<\/" (the same string to a JSON
// reader), so the data cannot close the fence early.
func fenced(source string, v any) (string, []string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the scan must see the text as written
	if err := enc.Encode(v); err != nil {
		return "", nil, err
	}
	body := strings.TrimSuffix(buf.String(), "\n")
	flags := scan(body)
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
