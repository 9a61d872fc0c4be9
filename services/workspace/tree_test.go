package workspace_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/workspace"
)

func newTree(t *testing.T) (*workspace.Tree, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "files")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "src", "deep"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret.txt"), []byte("outside\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "deep", "x.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# hi\nhi again\n"), 0o644))
	tr, err := workspace.OpenTree(dir, -1, -1)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tr.Close() })
	return tr, dir
}

// TestPathsStayInsideTheWorkspace: '..', absolute paths and symbolic links
// that point out of the tree are refused by every file tool; a link inside
// the tree works.
func TestPathsStayInsideTheWorkspace(t *testing.T) {
	tr, dir := newTree(t)
	require.NoError(t, os.Symlink("../secret.txt", filepath.Join(dir, "escape")))
	require.NoError(t, os.Symlink("/etc", filepath.Join(dir, "etc")))
	require.NoError(t, os.Symlink("src/deep/x.txt", filepath.Join(dir, "inside")))

	for _, p := range []string{"../secret.txt", "src/../../secret.txt", "/etc/passwd", "/workspace/../secret.txt"} {
		_, err := tr.Read(workspace.ReadArgs{Path: p})
		require.True(t, fault.Is(err, fault.Invalid), "read %q: %v", p, err)
		_, err = tr.Edit(workspace.EditArgs{Action: "add", Path: p, Content: "x"}, 1<<20)
		require.True(t, fault.Is(err, fault.Invalid), "add %q: %v", p, err)
	}
	for _, p := range []string{"escape", "etc/passwd"} {
		_, err := tr.Read(workspace.ReadArgs{Path: p})
		require.True(t, fault.Is(err, fault.Forbidden), "read through link %q: %v", p, err)
		_, err = tr.Edit(workspace.EditArgs{Action: "replace", Path: p, OldText: "outside", NewText: "changed"}, 1<<20)
		require.True(t, fault.Is(err, fault.Forbidden), "edit through link %q: %v", p, err)
	}
	_, err := tr.Edit(workspace.EditArgs{Action: "add", Path: "etc/evil", Content: "x"}, 1<<20)
	require.Error(t, err, "a write through a link to /etc")
	_, err = tr.Edit(workspace.EditArgs{Action: "move", Path: "README.md", ToPath: "../moved"}, 1<<20)
	require.True(t, fault.Is(err, fault.Invalid), "move out: %v", err)
	_, err = tr.List(workspace.ListArgs{Path: "etc"})
	require.Error(t, err, "listing through a link out")
	_, err = tr.Search(workspace.SearchArgs{Query: "root", Path: "etc"})
	require.Error(t, err, "searching through a link out")
	b, _ := os.ReadFile(filepath.Join(filepath.Dir(dir), "secret.txt"))
	require.Equal(t, "outside\n", string(b), "the file outside is untouched")

	r, err := tr.Read(workspace.ReadArgs{Path: "inside", StartLine: 2, EndLine: 2})
	require.NoError(t, err)
	require.Equal(t, "two\n", r.Content)
	r, err = tr.Read(workspace.ReadArgs{Path: "/workspace/src/deep/x.txt"})
	require.NoError(t, err)
	require.Equal(t, 3, r.TotalLines)
}

func TestListDirGlobs(t *testing.T) {
	tr, _ := newTree(t)
	res, err := tr.List(workspace.ListArgs{Patterns: []string{"**/*.go"}, EntryType: "file"})
	require.NoError(t, err)
	require.Equal(t, []workspace.Entry{{Path: "src/main.go", Type: "file", Size: 45}}, res.Entries)
	res, err = tr.List(workspace.ListArgs{Patterns: []string{"*"}})
	require.NoError(t, err)
	require.Len(t, res.Entries, 2, "* stays within one segment: %v", res.Entries)
	res, err = tr.List(workspace.ListArgs{MaxDepth: 1})
	require.NoError(t, err)
	require.Len(t, res.Entries, 2)
	res, err = tr.List(workspace.ListArgs{MaxEntries: 2, MaxDepth: 5})
	require.NoError(t, err)
	require.True(t, res.Truncated)
	res, err = tr.List(workspace.ListArgs{EntryType: "dir", ExcludePatterns: []string{"src/deep"}, MaxDepth: 5})
	require.NoError(t, err)
	require.Equal(t, []workspace.Entry{{Path: "src", Type: "dir"}}, res.Entries)
	_, err = tr.List(workspace.ListArgs{EntryType: "socket"})
	require.True(t, fault.Is(err, fault.Invalid))
}

func TestSearchText(t *testing.T) {
	tr, _ := newTree(t)
	res, err := tr.Search(workspace.SearchArgs{Query: "hi", IncludeGlobs: []string{"*.md"}, ContextLines: 1})
	require.NoError(t, err)
	require.Len(t, res.Matches, 2)
	require.Equal(t, []string{"hi again"}, res.Matches[0].After)
	res, err = tr.Search(workspace.SearchArgs{Query: `^t\w+$`, Regex: true})
	require.NoError(t, err)
	require.Len(t, res.Matches, 2)
	_, err = tr.Search(workspace.SearchArgs{Query: "(", Regex: true})
	require.True(t, fault.Is(err, fault.Invalid))
}

// TestFileEdit: each action, a dry run that writes nothing, and
// expected_matches refusing an edit whose count changed.
func TestFileEdit(t *testing.T) {
	tr, dir := newTree(t)
	res, err := tr.Edit(workspace.EditArgs{Action: "replace", Path: "src/deep/x.txt", OldText: "two", NewText: "2", DryRun: true}, 1<<20)
	require.NoError(t, err)
	require.True(t, res.Changed)
	require.False(t, res.Written)
	require.Contains(t, res.Diff, "-two\n+2\n")
	b, _ := os.ReadFile(filepath.Join(dir, "src/deep/x.txt"))
	require.Equal(t, "one\ntwo\nthree\n", string(b), "a dry run writes nothing")

	_, err = tr.Edit(workspace.EditArgs{Action: "replace", Path: "src/deep/x.txt", OldText: "o", NewText: "0"}, 1<<20)
	require.True(t, fault.Is(err, fault.Conflict), "two matches without expected_matches: %v", err)
	_, err = tr.Edit(workspace.EditArgs{Action: "replace", Path: "src/deep/x.txt", OldText: "o", NewText: "0", ExpectedMatches: 3}, 1<<20)
	require.True(t, fault.Is(err, fault.Conflict), "count changed: %v", err)
	require.Contains(t, err.Error(), "occurs 2 times, not the 3 expected_matches")
	res, err = tr.Edit(workspace.EditArgs{Action: "replace", Path: "src/deep/x.txt", OldText: "o", NewText: "0", ExpectedMatches: 2}, 1<<20)
	require.NoError(t, err)
	require.True(t, res.Written)
	require.Equal(t, 2, res.Matches)

	res, err = tr.Edit(workspace.EditArgs{Action: "patch", Path: "src/deep/x.txt", Patch: "@@ -1,3 +1,3 @@\n 0ne\n-tw0\n+TWO\n three\n"}, 1<<20)
	require.NoError(t, err)
	require.True(t, res.Written)
	b, _ = os.ReadFile(filepath.Join(dir, "src/deep/x.txt"))
	require.Equal(t, "0ne\nTWO\nthree\n", string(b))
	_, err = tr.Edit(workspace.EditArgs{Action: "patch", Path: "src/deep/x.txt", Patch: "@@ -1,1 +1,1 @@\n-nope\n+yes\n"}, 1<<20)
	require.True(t, fault.Is(err, fault.Conflict))

	_, err = tr.Edit(workspace.EditArgs{Action: "add", Path: "new/dir/a.txt", Content: strings.Repeat("x", 100)}, 50)
	require.True(t, fault.Is(err, fault.TooLarge), "over quota: %v", err)
	res, err = tr.Edit(workspace.EditArgs{Action: "add", Path: "new/dir/a.txt", Content: "hello\n"}, 1<<20)
	require.NoError(t, err)
	require.True(t, res.Written)
	_, err = tr.Edit(workspace.EditArgs{Action: "add", Path: "new/dir/a.txt", Content: "again"}, 1<<20)
	require.True(t, fault.Is(err, fault.Conflict))
	res, err = tr.Edit(workspace.EditArgs{Action: "move", Path: "new/dir/a.txt", ToPath: "b.txt"}, 1<<20)
	require.NoError(t, err)
	require.True(t, res.Written)
	res, err = tr.Edit(workspace.EditArgs{Action: "delete", Path: "b.txt"}, 1<<20)
	require.NoError(t, err)
	require.Equal(t, int64(-6), res.Delta)
	_, err = os.Stat(filepath.Join(dir, "b.txt"))
	require.True(t, os.IsNotExist(err))
}

// TestFileToolLimits: every input of the file tools is bounded, and an
// answer over its size is cut and says so.
func TestFileToolLimits(t *testing.T) {
	tr, dir := newTree(t)
	var many strings.Builder
	for i := range workspace.DefaultMaxLines + 5 {
		many.WriteString(strings.Repeat("l", i%7) + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "many.txt"), []byte(many.String()), 0o644))
	r, err := tr.Read(workspace.ReadArgs{Path: "many.txt"})
	require.NoError(t, err)
	require.True(t, r.Truncated)
	require.Equal(t, workspace.DefaultMaxLines, r.EndLine)
	require.Equal(t, workspace.DefaultMaxLines+5, r.TotalLines)
	r, err = tr.Read(workspace.ReadArgs{Path: "many.txt", StartLine: workspace.DefaultMaxLines + 1})
	require.NoError(t, err)
	require.False(t, r.Truncated)
	require.Equal(t, workspace.DefaultMaxLines+5, r.EndLine, "reading on from end_line+1 reaches the end")

	wide := strings.Repeat(strings.Repeat("w", 1023)+"\n", workspace.MaxReplyBytes/1024+10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wide.txt"), []byte(wide), 0o644))
	r, err = tr.Read(workspace.ReadArgs{Path: "wide.txt"})
	require.NoError(t, err)
	require.True(t, r.Truncated, "an answer is cut at the reply's bytes")
	require.LessOrEqual(t, len(r.Content), workspace.MaxReplyBytes)

	big, err := os.Create(filepath.Join(dir, "big.txt"))
	require.NoError(t, err)
	require.NoError(t, big.Truncate(workspace.MaxReadBytes+1))
	require.NoError(t, big.Close())
	_, err = tr.Read(workspace.ReadArgs{Path: "big.txt"})
	require.True(t, fault.Is(err, fault.TooLarge), "a file over the read limit: %v", err)
	_, err = tr.Edit(workspace.EditArgs{Action: "replace", Path: "big.txt", OldText: "a", NewText: "b"}, 64<<20)
	require.True(t, fault.Is(err, fault.TooLarge), "an edit of a file over the read limit: %v", err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin.dat"), []byte{0xff, 0xfe, 0, 1}, 0o644))
	_, err = tr.Read(workspace.ReadArgs{Path: "bin.dat"})
	require.True(t, fault.Is(err, fault.Invalid), "a file that is not text: %v", err)
	_, err = tr.Read(workspace.ReadArgs{Path: "many.txt", StartLine: 5, EndLine: 2})
	require.True(t, fault.Is(err, fault.Invalid), "lines out of order: %v", err)
	_, err = tr.Read(workspace.ReadArgs{Path: strings.Repeat("p", workspace.MaxPathBytes+1)})
	require.True(t, fault.Is(err, fault.Invalid), "a path over its cap: %v", err)

	over := strings.Repeat("x", workspace.MaxEditBytes+1)
	for _, a := range []workspace.EditArgs{
		{Action: "add", Path: "huge.txt", Content: over},
		{Action: "replace", Path: "README.md", OldText: "hi", NewText: over, ExpectedMatches: 2},
		{Action: "patch", Path: "README.md", Patch: over},
	} {
		_, err = tr.Edit(a, 64<<20)
		require.Error(t, err, "%s over the edit limit", a.Action)
		require.False(t, fault.Is(err, fault.Internal), "%s: %v", a.Action, err)
	}
	_, err = tr.Edit(workspace.EditArgs{Action: "rename", Path: "README.md"}, 1<<20)
	require.True(t, fault.Is(err, fault.Invalid), "an unknown action: %v", err)

	_, err = tr.Search(workspace.SearchArgs{Query: strings.Repeat("q", workspace.MaxQueryBytes+1)})
	require.True(t, fault.Is(err, fault.Invalid), "a query over its cap: %v", err)
	_, err = tr.Search(workspace.SearchArgs{Query: "hi", ContextLines: workspace.MaxContextLines + 1})
	require.True(t, fault.Is(err, fault.Invalid), "context over its cap: %v", err)
	s, err := tr.Search(workspace.SearchArgs{Query: "l", MaxMatches: workspace.MaxMatches + 500})
	require.NoError(t, err)
	require.Len(t, s.Matches, workspace.MaxMatches, "max_matches is held to its cap")
	require.True(t, s.Truncated)

	globs := make([]string, 33)
	for i := range globs {
		globs[i] = "*.go"
	}
	_, err = tr.List(workspace.ListArgs{Patterns: globs})
	require.True(t, fault.Is(err, fault.Invalid), "too many patterns: %v", err)
	for i := range 30 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "src", "deep", "f"+strings.Repeat("x", i+1)), nil, 0o644))
	}
	l, err := tr.List(workspace.ListArgs{MaxDepth: 99, MaxEntries: 10})
	require.NoError(t, err)
	require.Len(t, l.Entries, 10)
	require.True(t, l.Truncated)
}

// TestExecArgsLimits: a command, its timeout, its wait and its workdir are
// bounded; defaults fill what is not given.
func TestExecArgsLimits(t *testing.T) {
	for _, a := range []workspace.ExecArgs{
		{Cmd: ""},
		{Cmd: "   "},
		{Cmd: strings.Repeat("x", workspace.MaxCommandBytes+1)},
		{Cmd: "true\x00"},
		{Cmd: "true", TimeoutMS: workspace.MaxTimeout.Milliseconds() + 1},
		{Cmd: "true", TimeoutMS: -1},
		{Cmd: "true", WaitMS: workspace.MaxWait.Milliseconds() + 1},
		{Cmd: "true", Workdir: "../out"},
	} {
		err := a.Check()
		require.True(t, fault.Is(err, fault.Invalid), "%q timeout %d wait %d workdir %q: %v", a.Cmd[:min(len(a.Cmd), 10)], a.TimeoutMS, a.WaitMS, a.Workdir, err)
	}
	a := workspace.ExecArgs{Cmd: "true"}
	require.NoError(t, a.Check())
	require.Equal(t, workspace.DefaultTimeout.Milliseconds(), a.TimeoutMS)
	require.Equal(t, workspace.DefaultWait.Milliseconds(), a.WaitMS)
}
