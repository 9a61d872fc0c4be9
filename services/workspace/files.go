package workspace

import (
	"io/fs"
	"path"
	"regexp"
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// ReadArgs are read_file's arguments. Lines count from 1; zero means the
// start or the end.
type ReadArgs struct {
	Path      string `json:"path"`
	StartLine int    `json:"start_line,omitempty"`
	EndLine   int    `json:"end_line,omitempty"`
}

// ReadResult is a slice of a text file.
type ReadResult struct {
	Path       string `json:"path"`
	Content    string `json:"content"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	TotalLines int    `json:"total_lines"`
	Truncated  bool   `json:"truncated"`
}

// Read returns the lines StartLine..EndLine of a UTF-8 file, cut at
// DefaultMaxLines lines and MaxReplyBytes bytes.
func (t *Tree) Read(a ReadArgs) (ReadResult, error) {
	rel, err := CleanPath(a.Path)
	if err != nil {
		return ReadResult{}, err
	}
	text, err := t.readText(rel)
	if err != nil {
		return ReadResult{}, err
	}
	return SliceLines(rel, text, a.StartLine, a.EndLine)
}

// SliceLines cuts text to the lines start..end (also used for skill files).
func SliceLines(name, text string, start, end int) (ReadResult, error) {
	if start < 0 || end < 0 || (end > 0 && end < start) {
		return ReadResult{}, fault.New(fault.Invalid, "start_line and end_line must be positive and in order")
	}
	lines := strings.SplitAfter(text, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if start == 0 {
		start = 1
	}
	res := ReadResult{Path: name, StartLine: start, TotalLines: len(lines)}
	if start > len(lines) {
		res.EndLine = start - 1
		return res, nil
	}
	last := len(lines)
	if end > 0 && end < last {
		last = end
	}
	if last-start+1 > DefaultMaxLines && end == 0 {
		last, res.Truncated = start+DefaultMaxLines-1, true
	}
	var b strings.Builder
	for i := start; i <= last; i++ {
		if b.Len()+len(lines[i-1]) > MaxReplyBytes {
			last, res.Truncated = i-1, true
			break
		}
		b.WriteString(lines[i-1])
	}
	res.Content, res.EndLine = b.String(), last
	return res, nil
}

// ListArgs are list_dir's arguments.
type ListArgs struct {
	Path            string   `json:"path,omitempty"`
	MaxDepth        int      `json:"max_depth,omitempty"`
	MaxEntries      int      `json:"max_entries,omitempty"`
	Patterns        []string `json:"patterns,omitempty"`
	ExcludePatterns []string `json:"exclude_patterns,omitempty"`
	EntryType       string   `json:"entry_type,omitempty"` // file, dir or any
}

// Entry is one listed file or folder.
type Entry struct {
	Path string `json:"path"`
	Type string `json:"type"` // file, dir, symlink or other
	Size int64  `json:"size,omitempty"`
}

// ListResult is a bounded listing.
type ListResult struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Truncated bool    `json:"truncated"`
}

// List limits.
const (
	DefaultListDepth   = 3
	MaxListDepth       = 32
	DefaultListEntries = 200
	MaxListEntries     = 5000
)

// List walks a folder breadth by depth, at most MaxDepth levels down and
// MaxEntries entries, keeping entries that match a pattern (when any is
// given), match no exclude pattern, and are of EntryType. Symbolic links
// are listed, never followed.
func (t *Tree) List(a ListArgs) (ListResult, error) {
	rel, err := CleanPath(a.Path)
	if err != nil {
		return ListResult{}, err
	}
	depth, max := bound(a.MaxDepth, DefaultListDepth, MaxListDepth), bound(a.MaxEntries, DefaultListEntries, MaxListEntries)
	switch a.EntryType {
	case "", "any", "file", "dir":
	default:
		return ListResult{}, fault.New(fault.Invalid, "entry_type must be file, dir or any")
	}
	incl, err := parseGlobs(a.Patterns)
	if err != nil {
		return ListResult{}, err
	}
	excl, err := parseGlobs(a.ExcludePatterns)
	if err != nil {
		return ListResult{}, err
	}
	if st, err := t.Root.Stat(rel); err != nil {
		return ListResult{}, FileError(rel, err)
	} else if !st.IsDir() {
		return ListResult{}, fault.New(fault.Invalid, "%s is not a directory", rel)
	}
	res := ListResult{Path: rel, Entries: []Entry{}}
	err = fs.WalkDir(t.Root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == rel {
			return nil
		}
		sub := strings.TrimPrefix(p, rel+"/")
		if rel == "." {
			sub = p
		}
		if len(excl) > 0 && anyMatch(excl, sub) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		level := strings.Count(sub, "/") + 1
		if keepEntry(d, a.EntryType) && (len(incl) == 0 || anyMatch(incl, sub)) {
			if len(res.Entries) >= max {
				res.Truncated = true
				return fs.SkipAll
			}
			res.Entries = append(res.Entries, entryOf(p, d))
		}
		if d.IsDir() && level >= depth {
			return fs.SkipDir
		}
		return nil
	})
	return res, err
}

func keepEntry(d fs.DirEntry, want string) bool {
	switch want {
	case "file":
		return d.Type().IsRegular()
	case "dir":
		return d.IsDir()
	}
	return true
}

func entryOf(p string, d fs.DirEntry) Entry {
	e := Entry{Path: p, Type: "other"}
	switch {
	case d.IsDir():
		e.Type = "dir"
	case d.Type()&fs.ModeSymlink != 0:
		e.Type = "symlink"
	case d.Type().IsRegular():
		e.Type = "file"
		if info, err := d.Info(); err == nil {
			e.Size = info.Size()
		}
	}
	return e
}

func bound(v, def, max int) int {
	if v <= 0 {
		return def
	}
	return min(v, max)
}

// SearchArgs are search_text's arguments.
type SearchArgs struct {
	Query        string   `json:"query"`
	Regex        bool     `json:"regex,omitempty"`
	Path         string   `json:"path,omitempty"`
	IncludeGlobs []string `json:"include_globs,omitempty"`
	ContextLines int      `json:"context_lines,omitempty"`
	MaxMatches   int      `json:"max_matches,omitempty"`
}

// Match is one matching line with its context.
type Match struct {
	Path   string   `json:"path"`
	Line   int      `json:"line"`
	Text   string   `json:"text"`
	Before []string `json:"before,omitempty"`
	After  []string `json:"after,omitempty"`
}

// SearchResult lists matches in path order.
type SearchResult struct {
	Matches      []Match `json:"matches"`
	FilesScanned int     `json:"files_scanned"`
	Truncated    bool    `json:"truncated"`
}

// Search limits.
const (
	MaxQueryBytes      = 1024
	MaxContextLines    = 10
	DefaultMaxMatches  = 100
	MaxMatches         = 1000
	maxSearchFiles     = 20000
	maxMatchLineBytes  = 500
	maxSearchFileBytes = 2 << 20
)

// Search looks for Query (plain text, or an RE2 expression when Regex) in
// the UTF-8 files under Path that match IncludeGlobs (all when none).
// Files larger than 2 MiB and files that are not text are skipped.
func (t *Tree) Search(a SearchArgs) (SearchResult, error) {
	if a.Query == "" || len(a.Query) > MaxQueryBytes {
		return SearchResult{}, fault.New(fault.Invalid, "query must be 1-%d bytes", MaxQueryBytes)
	}
	if a.ContextLines < 0 || a.ContextLines > MaxContextLines {
		return SearchResult{}, fault.New(fault.Invalid, "context_lines must be 0-%d", MaxContextLines)
	}
	pattern := regexp.QuoteMeta(a.Query)
	if a.Regex {
		pattern = a.Query
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return SearchResult{}, fault.New(fault.Invalid, "query is not a valid regular expression: %v", err)
	}
	rel, err := CleanPath(a.Path)
	if err != nil {
		return SearchResult{}, err
	}
	incl, err := parseGlobs(a.IncludeGlobs)
	if err != nil {
		return SearchResult{}, err
	}
	if _, err := t.Root.Stat(rel); err != nil {
		return SearchResult{}, FileError(rel, err)
	}
	max := bound(a.MaxMatches, DefaultMaxMatches, MaxMatches)
	res := SearchResult{Matches: []Match{}}
	err = fs.WalkDir(t.Root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if d.Name() == ".git" && d.IsDir() {
			return fs.SkipDir
		}
		if len(incl) > 0 && !anyMatch(incl, p) && !anyMatch(incl, path.Base(p)) {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > maxSearchFileBytes {
			return nil
		}
		if res.FilesScanned++; res.FilesScanned > maxSearchFiles {
			res.Truncated = true
			return fs.SkipAll
		}
		text, err := t.readText(p)
		if err != nil {
			return nil
		}
		if !searchFile(&res, p, text, re, a.ContextLines, max) {
			return fs.SkipAll
		}
		return nil
	})
	return res, err
}

// searchFile adds text's matches to res; false once max is reached.
func searchFile(res *SearchResult, p, text string, re *regexp.Regexp, ctxLines, max int) bool {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i, l := range lines {
		if !re.MatchString(l) {
			continue
		}
		if len(res.Matches) >= max {
			res.Truncated = true
			return false
		}
		m := Match{Path: p, Line: i + 1, Text: clip(l)}
		for j := max0(i - ctxLines); j < i; j++ {
			m.Before = append(m.Before, clip(lines[j]))
		}
		for j := i + 1; j < len(lines) && j <= i+ctxLines; j++ {
			m.After = append(m.After, clip(lines[j]))
		}
		res.Matches = append(res.Matches, m)
	}
	return true
}

func clip(s string) string {
	if len(s) <= maxMatchLineBytes {
		return s
	}
	cut := maxMatchLineBytes
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

func max0(n int) int { return max(n, 0) }
