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
