package computer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/visorhq/visor/services/tools"
)

func (s *Service) toolList(ctx context.Context, c tools.Call) (*tools.Result, error) {
	cl, err := s.callerOf(c)
	if err != nil {
		return nil, err
	}
	all, err := s.ListWorkspaces(ctx, cl)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d workspaces.", len(all))
	for _, l := range all {
		fmt.Fprintf(&b, "\n- %s: %s, revision %d, %s of %s, %d files, expires %s", l.WorkspaceID, l.State, l.DataRevision,
			fmtBytes(l.BytesUsed), fmtBytes(l.Quota), l.FilesUsed, l.ExpiresAt.UTC().Format(time.RFC3339))
		if l.Leased {
			b.WriteString(", leased to a live session")
		}
		for _, f := range l.Files {
			fmt.Fprintf(&b, "\n  - %s (%d bytes)", f.Path, f.Size)
		}
		if l.FilesTruncated {
			fmt.Fprintf(&b, "\n  (more than %d files; only the first %d are shown)", MaxListFiles, MaxListFiles)
		}
		if l.Unprocessable > 0 {
			fmt.Fprintf(&b, "\n  (%d items cannot be shown)", l.Unprocessable)
		}
	}
	return &tools.Result{Text: b.String(), Structured: map[string]any{"workspaces": all}}, nil
}

func (s *Service) toolRead(ctx context.Context, c tools.Call) (*tools.Result, error) {
	cl, err := s.callerOf(c)
	if err != nil {
		return nil, err
	}
	id, _ := tools.String(c.Args, "workspace_id")
	path, _ := tools.String(c.Args, "path")
	r, err := s.ReadFile(ctx, cl, id, path)
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: r.Fenced, Structured: r}, nil
}

func (s *Service) toolWrite(ctx context.Context, c tools.Call) (*tools.Result, error) {
	cl, err := s.callerOf(c)
	if err != nil {
		return nil, err
	}
	if !cl.workspacesOn {
		return nil, errSwitchedOff
	}
	id, _ := tools.String(c.Args, "workspace_id")
	path, _ := tools.String(c.Args, "path")
	content, _ := tools.String(c.Args, "content")
	var expected *int64
	if n, ok := tools.Int(c.Args, "expected_revision"); ok {
		expected = &n
	}
	w, err := s.WriteFile(ctx, cl, id, path, content, c.Args, expected)
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Written. Workspace %s is at revision %d: %s of %s, %d files.",
		id, w.DataRevision, fmtBytes(w.BytesUsed), fmtBytes(w.Quota), w.FilesUsed), Structured: w}, nil
}
