package workspace

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

// decode reads a call's arguments into v (CheckArgs has checked their
// names and types).
func decode(c tools.Call, v any) error {
	if len(c.Raw) == 0 {
		b, _ := json.Marshal(c.Args)
		c.Raw = b
	}
	if err := json.Unmarshal(c.Raw, v); err != nil {
		return fault.New(fault.Invalid, "arguments: %v", err)
	}
	return nil
}

// fileNote is the audit note of a file call: sizes, never contents.
func fileNote(extra map[string]any) map[string]any { return extra }

func (s *Service) readTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a ReadArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	var r ReadResult
	if strings.HasPrefix(a.Path, SkillScheme) {
		var err error
		if r, err = s.readSkillFile(ctx, c.Subject, a); err != nil {
			return nil, err
		}
	} else {
		ans, err := s.run(ctx, c.Subject, Op{Read: &a})
		if err != nil {
			return nil, err
		}
		r = *ans.Read
	}
	text := fmt.Sprintf("%s lines %d-%d of %d", r.Path, r.StartLine, r.EndLine, r.TotalLines)
	if r.Truncated {
		text += " (truncated: read on from end_line+1)"
	}
	return &tools.Result{Text: text + ":\n" + r.Content, Structured: r,
		Note: fileNote(map[string]any{"bytes": len(r.Content), "lines": r.EndLine - r.StartLine + 1})}, nil
}

func (s *Service) listTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a ListArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	ans, err := s.run(ctx, c.Subject, Op{List: &a})
	if err != nil {
		return nil, err
	}
	r := ans.List
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries under %s (truncated: %t)\n", len(r.Entries), r.Path, r.Truncated)
	for _, e := range r.Entries {
		if e.Type == "dir" {
			fmt.Fprintf(&b, "%s/\n", e.Path)
		} else {
			fmt.Fprintf(&b, "%s\t%d\n", e.Path, e.Size)
		}
	}
	return &tools.Result{Text: b.String(), Structured: r, Note: map[string]any{"entries": len(r.Entries)}}, nil
}

func (s *Service) searchTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a SearchArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	ans, err := s.run(ctx, c.Subject, Op{Search: &a})
	if err != nil {
		return nil, err
	}
	r := ans.Search
	var b strings.Builder
	fmt.Fprintf(&b, "%d matches in %d files scanned (truncated: %t)\n", len(r.Matches), r.FilesScanned, r.Truncated)
	for _, m := range r.Matches {
		fmt.Fprintf(&b, "%s:%d: %s\n", m.Path, m.Line, m.Text)
	}
	return &tools.Result{Text: b.String(), Structured: r, Note: map[string]any{"matches": len(r.Matches)}}, nil
}

func (s *Service) editTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a EditArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	ans, err := s.run(ctx, c.Subject, Op{Edit: &a})
	if err != nil {
		return nil, err
	}
	r := ans.Edit
	text := fmt.Sprintf("%s %s: changed %t, written %t", a.Action, r.Path, r.Changed, r.Written)
	if r.DryRun {
		text = fmt.Sprintf("dry run of %s %s: would change %t; nothing written", a.Action, r.Path, r.Changed)
	}
	if r.Diff != "" {
		text += "\n" + r.Diff
	}
	out := map[string]any{"action": r.Action, "path": r.Path, "changed": r.Changed, "written": r.Written, "dry_run": r.DryRun,
		"diff": r.Diff, "delta_bytes": r.Delta}
	if r.ToPath != "" {
		out["to_path"] = r.ToPath
	}
	if r.Matches > 0 {
		out["matches"] = r.Matches
	}
	if ans.Usage != nil {
		out["usage"] = ans.Usage
	}
	return &tools.Result{Text: text, Structured: out, Note: map[string]any{"delta_bytes": r.Delta, "written": r.Written}}, nil
}

func (s *Service) execTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a ExecArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	if err := a.Check(); err != nil {
		return nil, err
	}
	if a.Skill != "" {
		if err := s.withSkill(ctx, c.Subject, &a); err != nil {
			return nil, err
		}
	}
	ans, err := s.run(ctx, c.Subject, Op{Exec: &a})
	if err != nil {
		return nil, err
	}
	v, err := s.redacted(ctx, c, *ans.Session)
	if err != nil {
		return nil, err
	}
	res := sessionResult(v)
	if ans.Usage != nil {
		res.Structured.(map[string]any)["usage"] = ans.Usage
	}
	return res, nil
}

// redacted hides the employee's Skill variable values in v's output.
func (s *Service) redacted(ctx context.Context, c tools.Call, v SessionView) (SessionView, error) {
	r, err := s.redactor(ctx, c.Principal())
	if err != nil {
		return v, err
	}
	if r != nil {
		v.Output, v.Cmd = r.Replace(v.Output), r.Replace(v.Cmd)
	}
	return v, nil
}

// sessionResult shows a session: a running command reports no
// command_ok; an ended one reports command_ok, exit_code and, when it
// failed, command_error. A failed command is a normal result.
func sessionResult(v SessionView) *tools.Result {
	out := map[string]any{"session_id": v.SessionID, "status": v.Status, "cmd": v.Cmd, "tty": v.TTY, "started_at": v.StartedAt,
		"duration_ms": v.DurationMS, "output": v.Output, "cursor": v.Cursor, "next_cursor": v.NextCursor,
		"output_truncated": v.OutputTruncated, "output_bytes": v.OutputBytes}
	if v.Dropped > 0 {
		out["dropped_bytes"] = v.Dropped
	}
	var text string
	if v.Status == Running {
		text = fmt.Sprintf("still running after %d ms: session %s (watch with session_observe action=status, cursor=%d)", v.DurationMS, v.SessionID, v.NextCursor)
	} else {
		out["command_ok"], out["exit_code"], out["ended_at"] = *v.CommandOK, *v.ExitCode, v.EndedAt
		text = fmt.Sprintf("exited with code %d in %d ms", *v.ExitCode, v.DurationMS)
		if v.CommandError != "" {
			out["command_error"] = v.CommandError
			text = fmt.Sprintf("command failed: %s (exit code %d, %d ms)", v.CommandError, *v.ExitCode, v.DurationMS)
		}
	}
	if v.OutputTruncated {
		text += fmt.Sprintf("; more output from cursor %d", v.NextCursor)
	}
	note := map[string]any{"status": v.Status, "output_bytes": v.OutputBytes}
	if v.ExitCode != nil {
		note["exit_code"] = *v.ExitCode
	}
	return &tools.Result{Text: text + "\n" + v.Output, Structured: out, Note: note}
}

func (s *Service) observeTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a ObserveArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	if a.Action == "status" && a.SessionID == "" {
		return nil, fault.New(fault.Invalid, "status needs session_id")
	}
	ans, err := s.run(ctx, c.Subject, Op{Observe: &a})
	if err != nil {
		return nil, err
	}
	if ans.Session != nil {
		v, err := s.redacted(ctx, c, *ans.Session)
		if err != nil {
			return nil, err
		}
		return sessionResult(v), nil
	}
	list := make([]map[string]any, 0, len(ans.Sessions))
	var b strings.Builder
	fmt.Fprintf(&b, "%d session(s)\n", len(ans.Sessions))
	for _, v := range ans.Sessions {
		v, _ := s.redacted(ctx, c, v)
		m := sessionResult(v).Structured.(map[string]any)
		delete(m, "output")
		list = append(list, m)
		fmt.Fprintf(&b, "%s\t%s\t%s\n", v.SessionID, v.Status, v.Cmd)
	}
	return &tools.Result{Text: b.String(), Structured: map[string]any{"sessions": list}}, nil
}

func (s *Service) actTool(ctx context.Context, c tools.Call) (*tools.Result, error) {
	var a ActArgs
	if err := decode(c, &a); err != nil {
		return nil, err
	}
	if a.Action != "kill_all" && a.SessionID == "" {
		return nil, fault.New(fault.Invalid, "%s needs session_id", a.Action)
	}
	ans, err := s.run(ctx, c.Subject, Op{Act: &a})
	if err != nil {
		return nil, err
	}
	r := ans.Act
	text := fmt.Sprintf("killed %d session(s)", len(r.Killed))
	if a.Action == "write" {
		text = fmt.Sprintf("wrote %d bytes to %s", r.Written, a.SessionID)
	}
	return &tools.Result{Text: text, Structured: r, Note: map[string]any{"killed": len(r.Killed), "written_bytes": r.Written}}, nil
}
