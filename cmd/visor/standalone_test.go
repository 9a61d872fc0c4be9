package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// repoRoot is the repository's top directory, seen from cmd/visor.
const repoRoot = "../.."

// outsideRefs are the ways a text can point at something a user of the
// repository does not have: the project brief and its reference documents,
// which live outside it, and tools kept beside it. The patterns are built
// from pieces so this file does not match itself.
var outsideRefs = []*regexp.Regexp{
	regexp.MustCompile(`\b` + "SP" + `EC\b`),
	regexp.MustCompile(`\b` + "sha" + `red/`),
	regexp.MustCompile(`(?i)\b` + "se" + `eds?\b\s*\d{3}|\b` + "se" + `eds['’]|\bthe ` + "se" + `eds?\b|\b` + "se" + `eds/`),
	regexp.MustCompile(`mcp-` + "conformance\b"),
	regexp.MustCompile("ST" + `YLE\.md`),
}

// docRef is a mention of a page of docs/, in prose or code.
var docRef = regexp.MustCompile(`\bdocs/[A-Za-z0-9_-]+\.md\b`)

// mdLink is a Markdown link target.
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestRepositoryStandsAlone reads the README, docs/, deploy/, migrations,
// pages and every Go file (comments, help texts, tool descriptions), and
// fails on a reference to something outside the repository, a mention of
// a docs/ page that does not exist, or a relative Markdown link to a
// missing file.
func TestRepositoryStandsAlone(t *testing.T) {
	var problems []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", ".dev":
				return filepath.SkipDir
			}
			return nil
		}
		if !readable(rel) || rel == filepath.Join("cmd", "visor", "standalone_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			at := rel + ":" + strconv.Itoa(i+1)
			for _, re := range outsideRefs {
				if m := re.FindString(line); m != "" {
					problems = append(problems, at+": refers outside the repository ("+m+")")
				}
			}
			for _, m := range docRef.FindAllString(line, -1) {
				if _, err := os.Stat(filepath.Join(repoRoot, m)); err != nil {
					problems = append(problems, at+": "+m+" does not exist")
				}
			}
			if strings.HasSuffix(rel, ".md") {
				problems = append(problems, brokenLinks(rel, at, line)...)
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Empty(t, problems, "say it in the repository's own words, or point at a file that is in it")
}

// readable reports whether rel is a text the check reads.
func readable(rel string) bool {
	switch filepath.Ext(rel) {
	case ".go", ".md", ".sql", ".html", ".yaml", ".yml", ".mjs", ".sh", ".example", ".toml":
		return true
	}
	return strings.HasPrefix(rel, ".ci"+string(filepath.Separator)) || filepath.Base(rel) == "Dockerfile"
}

// brokenLinks returns the relative links on line of the Markdown file rel
// whose target does not exist inside the repository.
func brokenLinks(rel, at, line string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
		target := strings.SplitN(m[1], "#", 2)[0]
		if target == "" || regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
			continue
		}
		p := filepath.Join(filepath.Dir(rel), target)
		if strings.HasPrefix(p, "..") {
			out = append(out, at+": link "+m[1]+" leaves the repository")
			continue
		}
		if _, err := os.Stat(filepath.Join(repoRoot, p)); err != nil {
			out = append(out, at+": link "+m[1]+" points at a missing file")
		}
	}
	return out
}

// TestToolDescriptionsNameNoFiles: a model reads tool descriptions and
// cannot open the repository's files, so no description or parameter
// description sends it to one. SKILL.md is not one of them: it is the file
// every Skill folder holds, which the model reads through read_file.
func TestToolDescriptionsNameNoFiles(t *testing.T) {
	file := regexp.MustCompile(`\.md\b|\bdocs/|\.\./|\bSee [a-z]+/`)
	repoFile := func(s string) bool { return file.MatchString(strings.ReplaceAll(s, "SKILL.md", "")) }
	for _, tl := range servedRegistry().All() {
		require.False(t, repoFile(tl.Description), "%s: %q", tl.Name, tl.Description)
		for _, p := range tl.Params {
			require.False(t, repoFile(p.Description), "%s.%s: %q", tl.Name, p.Name, p.Description)
		}
	}
}
