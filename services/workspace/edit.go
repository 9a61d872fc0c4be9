package workspace

import (
	"strings"

	"github.com/visorhq/visor/services/fault"
)

// EditArgs are file_edit's arguments. Action is replace, patch, add,
// delete or move.
type EditArgs struct {
	Action          string `json:"action"`
	Path            string `json:"path"`
	OldText         string `json:"old_text,omitempty"`
	NewText         string `json:"new_text,omitempty"`
	ExpectedMatches int    `json:"expected_matches,omitempty"`
	Patch           string `json:"patch,omitempty"`
	Content         string `json:"content,omitempty"`
	ToPath          string `json:"to_path,omitempty"`
	DryRun          bool   `json:"dry_run,omitempty"`
}

// EditResult says what an edit did (or, for a dry run, would do).
type EditResult struct {
	Action  string `json:"action"`
	Path    string `json:"path"`
	ToPath  string `json:"to_path,omitempty"`
	Changed bool   `json:"changed"`
	Written bool   `json:"written"`
	DryRun  bool   `json:"dry_run"`
	Matches int    `json:"matches,omitempty"`
	Diff    string `json:"diff,omitempty"`
	// Delta is the change in the tree's bytes.
	Delta int64 `json:"delta_bytes"`
}

// Edit applies one change to the tree, or only previews it with DryRun.
// room is how many more bytes the quota allows; an edit that would grow
// the tree past it is refused.
func (t *Tree) Edit(a EditArgs, room int64) (EditResult, error) {
	rel, err := CleanPath(a.Path)
	if err != nil {
		return EditResult{}, err
	}
	if rel == "." {
		return EditResult{}, fault.New(fault.Invalid, "path must name a file")
	}
	res := EditResult{Action: a.Action, Path: rel, DryRun: a.DryRun}
	switch a.Action {
	case "replace", "patch":
		return t.rewrite(a, rel, res, room)
	case "add":
		return t.add(a, rel, res, room)
	case "delete":
		return t.remove(rel, res)
	case "move":
		return t.move(a, rel, res)
	}
	return EditResult{}, fault.New(fault.Invalid, "action must be replace, patch, add, delete or move")
}

func (t *Tree) rewrite(a EditArgs, rel string, res EditResult, room int64) (EditResult, error) {
	old, err := t.readText(rel)
	if err != nil {
		return res, err
	}
	var text string
	if a.Action == "patch" {
		if a.Patch == "" || len(a.Patch) > MaxEditBytes {
			return res, fault.New(fault.Invalid, "patch must be 1 byte to 1 MiB of unified diff")
		}
		if text, err = ApplyPatch(old, a.Patch); err != nil {
			return res, err
		}
	} else {
		if text, res.Matches, err = replace(old, a); err != nil {
			return res, err
		}
	}
	return t.commit(rel, old, text, res, room)
}

// replace substitutes NewText for OldText. Without ExpectedMatches the old
// text must occur exactly once; with it, exactly that many times (and all
// are replaced), so an edit planned on a file that has changed since is
// refused.
func replace(old string, a EditArgs) (string, int, error) {
	if a.OldText == "" {
		return "", 0, fault.New(fault.Invalid, "replace needs old_text")
	}
	if len(a.NewText) > MaxEditBytes {
		return "", 0, fault.New(fault.TooLarge, "new_text must be at most 1 MiB")
	}
	if a.ExpectedMatches < 0 {
		return "", 0, fault.New(fault.Invalid, "expected_matches must be positive")
	}
	n := strings.Count(old, a.OldText)
	want := a.ExpectedMatches
	switch {
	case want == 0 && n != 1:
		return "", n, fault.New(fault.Conflict, "old_text occurs %d times; it must occur exactly once, or set expected_matches to the count you mean to replace", n)
	case want > 0 && n != want:
		return "", n, fault.New(fault.Conflict, "old_text occurs %d times, not the %d expected_matches; the file may have changed: read it again", n, want)
	}
	return strings.ReplaceAll(old, a.OldText, a.NewText), n, nil
}

func (t *Tree) add(a EditArgs, rel string, res EditResult, room int64) (EditResult, error) {
	if len(a.Content) > MaxEditBytes {
		return res, fault.New(fault.TooLarge, "content must be at most 1 MiB")
	}
	if _, err := t.Root.Lstat(rel); err == nil {
		return res, fault.New(fault.Conflict, "%s already exists; use replace or patch to change it", rel)
	}
	return t.commit(rel, "", a.Content, res, room)
}

// commit writes text over rel unless it is a dry run, with the diff.
func (t *Tree) commit(rel, old, text string, res EditResult, room int64) (EditResult, error) {
	res.Changed = old != text
	res.Diff = Diff(rel, old, text)
	res.Delta = int64(len(text) - len(old))
	if res.Delta > 0 && res.Delta > room {
		return res, fault.New(fault.TooLarge, "the edit would take the workspace past its quota")
	}
	if res.DryRun || !res.Changed && res.Action != "add" {
		return res, nil
	}
	if err := t.writeText(rel, text); err != nil {
		return res, err
	}
	res.Written = true
	return res, nil
}

func (t *Tree) remove(rel string, res EditResult) (EditResult, error) {
	st, err := t.Root.Lstat(rel)
	if err != nil {
		return res, FileError(rel, err)
	}
	if st.IsDir() {
		return res, fault.New(fault.Invalid, "%s is a directory; delete removes one file (use exec_command for folders)", rel)
	}
	res.Changed, res.Delta = true, -st.Size()
	if res.DryRun {
		return res, nil
	}
	if err := t.Root.Remove(rel); err != nil {
		return res, FileError(rel, err)
	}
	res.Written = true
	return res, nil
}

func (t *Tree) move(a EditArgs, rel string, res EditResult) (EditResult, error) {
	to, err := CleanPath(a.ToPath)
	if err != nil || to == "." {
		return res, fault.New(fault.Invalid, "move needs to_path, a path inside the workspace")
	}
	res.ToPath = to
	if _, err := t.Root.Lstat(rel); err != nil {
		return res, FileError(rel, err)
	}
	if _, err := t.Root.Lstat(to); err == nil {
		return res, fault.New(fault.Conflict, "%s already exists", to)
	}
	res.Changed = true
	if res.DryRun {
		return res, nil
	}
	if dir := parentOf(to); dir != "." {
		if err := t.Root.MkdirAll(dir, 0o755); err != nil {
			return res, FileError(to, err)
		}
		t.own(dir)
	}
	if err := t.Root.Rename(rel, to); err != nil {
		return res, FileError(rel, err)
	}
	res.Written = true
	return res, nil
}
