package computer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

func ptr[T any](v T) *T { return &v }

// Register declares the eight computer_* and three computer_workspace_*
// tools (catalog.Family).
func (s *Service) Register(reg *tools.Registry) {
	add := func(gate tools.Gate, scope string, t tools.Tool) {
		t.Family, t.Gate, t.Scope, t.StringScalars = "computer", gate, scope, true
		t.ProcessAgent = true
		reg.Register(t)
	}
	act := func(title string) tools.Annotations {
		return tools.Annotations{Title: title, Destructive: ptr(false), OpenWorld: ptr(true)}
	}
	cu, w := tools.GateComputerUse, identity.ScopeToolsWrite
	add(cu, w, tools.Tool{Name: "computer_session_start", Handler: s.toolStart,
		Description: "Start your one browser session (a container on a worker). The result lists the limits, whether high-risk actions can be confirmed, and the sites computer_navigate can open. With the workspace tools, your workspace's files are in the browser at /workspace/tree (read-only, live): workspace_tree_path says so, or workspace_tree_note says why not.",
		Params: []tools.Param{
			{Name: "task", Type: "string", Description: "What the session is for, at most 2,000 bytes."},
			{Name: "width", Type: "integer", Required: true, Description: "Viewport width, 320-1920 pixels."},
			{Name: "height", Type: "integer", Required: true, Description: "Viewport height, 240-1200 pixels."},
			{Name: "workspace", Type: "string", Description: `"new" or a ws-… id from computer_workspace_list; mounted read-only at /workspace/files (root only).`}},
		Annotations: act("Start computer session")})
	add(cu, w, tools.Tool{Name: "computer_screenshot", Handler: s.toolScreenshot,
		Description: "A PNG of your session's screen with password and payment fields masked, then a text block with actions used and time left. Does not count as an action.",
		Annotations: tools.Annotations{Title: "Screenshot", ReadOnly: true, OpenWorld: ptr(true)}})
	add(cu, w, tools.Tool{Name: "computer_click", Handler: s.toolClick,
		Description: "Click at x,y in your session (one action).",
		Params: []tools.Param{
			{Name: "x", Type: "integer", Required: true, Description: "Pixels from the left edge of the viewport."},
			{Name: "y", Type: "integer", Required: true, Description: "Pixels from the top edge of the viewport."},
			{Name: "button", Type: "string", Description: "left (default) or right."},
			{Name: "double", Type: "boolean", Description: "Double-click; left button only."}},
		Annotations: act("Click")})
	add(cu, w, tools.Tool{Name: "computer_type", Handler: s.toolType,
		Description: "Type text into the focused field of your session (one action). Audited as a character count only.",
		Params: []tools.Param{{Name: "text", Type: "string", Required: true, Secret: true, Audit: tools.AuditChars,
			Description: "1-2,000 characters."}},
		Annotations: act("Type")})
	add(cu, w, tools.Tool{Name: "computer_key", Handler: s.toolKey,
		Description: "Press a key or chord in your session (one action), e.g. Return, Tab, ctrl+a.",
		Params: []tools.Param{{Name: "key", Type: "string", Required: true,
			Description: "Letters, digits, +, - and _ only: Return, Escape, Tab, Backspace, ArrowDown, ctrl+s."}},
		Annotations: act("Press key")})
	add(cu, w, tools.Tool{Name: "computer_scroll", Handler: s.toolScroll,
		Description: "Scroll at x,y in your session (one action).",
		Params: []tools.Param{
			{Name: "x", Type: "integer", Required: true, Description: "Pixels from the left edge."},
			{Name: "y", Type: "integer", Required: true, Description: "Pixels from the top edge."},
			{Name: "direction", Type: "string", Description: "up or down (default down)."},
			{Name: "amount", Type: "integer", Description: "Steps of about 100 pixels, 1-20 (default 3)."}},
		Annotations: act("Scroll")})
	add(cu, w, tools.Tool{Name: "computer_navigate", Handler: s.toolNavigate,
		Description: "Open a URL in your session (one action): https only, host exactly on your allowed_domains, port 443, no user or password, at most 2,000 bytes. Refused without an allowlist.",
		Params: []tools.Param{{Name: "url", Type: "string", Required: true, Secret: true, Audit: tools.AuditHost,
			Description: "The https:// URL to open."}},
		Annotations: act("Navigate")})
	add(cu, w, tools.Tool{Name: "computer_session_stop", Handler: s.toolStop,
		Description: "Stop your browser session and remove its container.",
		Params:      []tools.Param{{Name: "session_id", Type: "string", Description: "Your open session's id; optional."}},
		Annotations: tools.Annotations{Title: "Stop computer session", Destructive: ptr(true), Idempotent: true, OpenWorld: ptr(false)}})
	s.registerWorkspace(reg, add)
}

func (s *Service) registerWorkspace(reg *tools.Registry, add func(tools.Gate, string, tools.Tool)) {
	g := tools.GateComputerWorkspace
	pWS := tools.Param{Name: "workspace_id", Type: "string", Required: true, Description: "A ws-… id from computer_workspace_list."}
	pPath := tools.Param{Name: "path", Type: "string", Required: true, Secret: true, Audit: tools.AuditHash,
		Description: "Relative, at most 4 levels; letters, digits, inner spaces and -_.()（） only."}
	add(g, identity.ScopeToolsRead, tools.Tool{Name: "computer_workspace_list", Handler: s.toolList,
		Description: "Your durable workspaces: state, data_revision, usage, quota, expires_at, leased, and up to 200 files each (path, size, sha256).",
		Annotations: tools.Annotations{Title: "List workspaces", ReadOnly: true, OpenWorld: ptr(false)}})
	add(g, identity.ScopeToolsRead, tools.Tool{Name: "computer_workspace_read", Handler: s.toolRead,
		Description: "Read one UTF-8 text file (at most 48 KiB) of your workspace; it comes back fenced as data with injection-scan flags.",
		Params:      []tools.Param{pWS, pPath},
		Annotations: tools.Annotations{Title: "Read workspace file", ReadOnly: true, OpenWorld: ptr(false)}})
	add(g, identity.ScopeToolsWrite, tools.Tool{Name: "computer_workspace_write", Handler: s.toolWrite,
		Description: "Write one file (at most 48 KiB UTF-8; request at most 64 KiB JSON-encoded) into the workspace your live session attached. Atomic; refused over quota or on a revision mismatch.",
		Params: []tools.Param{pWS, pPath,
			{Name: "content", Type: "string", Required: true, Secret: true, Audit: tools.AuditChars, Description: "The whole new content."},
			{Name: "expected_revision", Type: "integer", Description: "Refuse unless the workspace's data_revision is this."}},
		Annotations: tools.Annotations{Title: "Write workspace file", Destructive: ptr(true), OpenWorld: ptr(false)}})
}

func (s *Service) callerOf(c tools.Call) (caller, error) {
	return callerOf(c.Principal(), c.Subject.Agent, c.Subject.Tenant)
}

func (s *Service) toolStart(ctx context.Context, c tools.Call) (*tools.Result, error) {
	cl, err := s.callerOf(c)
	if err != nil {
		return nil, err
	}
	r := StartRequest{}
	r.Task, _ = tools.String(c.Args, "task")
	r.Width, _ = tools.Int(c.Args, "width")
	r.Height, _ = tools.Int(c.Args, "height")
	r.Workspace, _ = tools.String(c.Args, "workspace")
	out, err := s.StartSession(ctx, cl, r)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Session %s started at %dx%d. Limits: %d actions (click, type, key, scroll, navigate), idle timeout %s, ends by %s.",
		out.SessionID, out.Width, out.Height, out.MaxActions, IdleTimeout, out.EndsAt.Format(time.RFC3339))
	b.WriteString(" High-risk actions (payments, purchases, deleting or sending on someone's behalf) cannot be confirmed in a chat here: do not attempt them.")
	if out.Network {
		fmt.Fprintf(&b, " computer_navigate can open: %s (https, port 443).", strings.Join(out.AllowedSites, ", "))
	} else {
		b.WriteString(" The session has no network: you have no allowed_domains, so computer_navigate is refused.")
	}
	if out.Workspace != nil {
		fmt.Fprintf(&b, " Workspace %s is mounted read-only at %s (root only): revision %d, %s of %s used, %d files.",
			out.WorkspaceID, out.MountPath, out.Workspace.DataRevision, fmtBytes(out.Workspace.BytesUsed), fmtBytes(out.Workspace.Quota), out.Workspace.FilesUsed)
	}
	return &tools.Result{Text: b.String(), Structured: out}, nil
}

func (s *Service) act(ctx context.Context, c tools.Call, a Action) (*tools.Result, error) {
	cl, err := s.callerOf(c)
	if err != nil {
		return nil, err
	}
	r, err := s.Act(ctx, cl, a)
	if err != nil {
		return nil, err
	}
	status := fmt.Sprintf("Actions used: %d of %d. Time left: %s.", r.ActionsUsed, r.MaxActions, r.TimeLeft.Round(time.Second))
	structured := map[string]any{"actions_used": r.ActionsUsed, "max_actions": r.MaxActions, "time_left_secs": int(r.TimeLeft / time.Second)}
	if a.Kind != ActScreenshot {
		text := "Done. " + status
		if r.Host != "" {
			text = fmt.Sprintf("Done; the page is on %s. %s", r.Host, status)
		}
		return &tools.Result{Text: text, Structured: structured}, nil
	}
	structured["masked_regions"] = r.Masked
	text := status
	if r.Masked > 0 {
		text = fmt.Sprintf("%d sensitive field(s) are masked. %s", r.Masked, status)
	}
	if r.FullyMasked != "" {
		structured["fully_masked"] = r.FullyMasked
		text = fmt.Sprintf("The picture is fully masked: %s. Next step: %s. %s", r.FullyMasked, nextStep(r.FullyMasked), status)
	}
	return &tools.Result{Text: text, Structured: structured, Images: []tools.Image{{MIMEType: "image/png", Data: r.PNG}}}, nil
}

// nextStep says what to do about a fully masked picture.
func nextStep(reason string) string {
	switch reason {
	case MaskSeveralWindows:
		return "close the extra windows or tabs (computer_key ctrl+w), then take a screenshot again"
	case MaskSensitiveFront:
		return "leave the sensitive page (navigate elsewhere) or finish it without looking; type only what you were given"
	default:
		return "wait a moment and take a screenshot again; if it persists, stop the session and start a new one"
	}
}

func (s *Service) toolScreenshot(ctx context.Context, c tools.Call) (*tools.Result, error) {
	return s.act(ctx, c, Action{Kind: ActScreenshot})
}

func (s *Service) toolClick(ctx context.Context, c tools.Call) (*tools.Result, error) {
	x, _ := tools.Int(c.Args, "x")
	y, _ := tools.Int(c.Args, "y")
	button, _ := tools.String(c.Args, "button")
	double, _ := c.Args["double"].(bool)
	if button == "" {
		button = "left"
	}
	switch {
	case button != "left" && button != "right":
		return nil, fault.New(fault.Invalid, `button must be "left" or "right"`)
	case double && button != "left":
		return nil, fault.New(fault.Invalid, "double is left button only")
	}
	if err := s.checkPoint(x, y); err != nil {
		return nil, err
	}
	return s.act(ctx, c, Action{Kind: ActClick, X: int(x), Y: int(y), Button: button, Double: double})
}

// checkPoint bounds coordinates by the largest viewport; the worker checks
// them against the session's own.
func (s *Service) checkPoint(x, y int64) error {
	if x < 0 || y < 0 || x >= MaxWidth || y >= MaxHeight {
		return fault.New(fault.Invalid, "x and y must lie inside the viewport (x 0-%d, y 0-%d at most)", MaxWidth-1, MaxHeight-1)
	}
	return nil
}

func (s *Service) toolType(ctx context.Context, c tools.Call) (*tools.Result, error) {
	text, _ := tools.String(c.Args, "text")
	if err := CheckText(text); err != nil {
		return nil, err
	}
	return s.act(ctx, c, Action{Kind: ActType, Text: text})
}

func (s *Service) toolKey(ctx context.Context, c tools.Call) (*tools.Result, error) {
	key, _ := tools.String(c.Args, "key")
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	return s.act(ctx, c, Action{Kind: ActKey, Key: key})
}

func (s *Service) toolScroll(ctx context.Context, c tools.Call) (*tools.Result, error) {
	x, _ := tools.Int(c.Args, "x")
	y, _ := tools.Int(c.Args, "y")
	dir, ok := tools.String(c.Args, "direction")
	if !ok {
		dir = "down"
	}
	amount, ok := tools.Int(c.Args, "amount")
	if !ok {
		amount = DefaultScroll
	}
	if err := CheckScroll(dir, amount); err != nil {
		return nil, err
	}
	if err := s.checkPoint(x, y); err != nil {
		return nil, err
	}
	return s.act(ctx, c, Action{Kind: ActScroll, X: int(x), Y: int(y), Direction: dir, Amount: int(amount)})
}

func (s *Service) toolNavigate(ctx context.Context, c tools.Call) (*tools.Result, error) {
	u, _ := tools.String(c.Args, "url")
	return s.act(ctx, c, Action{Kind: ActNavigate, URL: u})
}

func (s *Service) toolStop(ctx context.Context, c tools.Call) (*tools.Result, error) {
	cl, err := s.callerOf(c)
	if err != nil {
		return nil, err
	}
	id, _ := tools.String(c.Args, "session_id")
	stopped, err := s.StopSession(ctx, cl, id)
	if err != nil {
		return nil, err
	}
	return &tools.Result{Text: fmt.Sprintf("Session %s stopped; its container is removed.", stopped),
		Structured: map[string]any{"session_id": stopped, "state": SessionStopped}}, nil
}
