package computer

import (
	"context"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/tools"
)

// Listing is one workspace in computer_workspace_list.
type Listing struct {
	WorkspaceID string `json:"workspace_id"`
	Workspace
	Leased         bool       `json:"leased"`
	Files          []FileInfo `json:"files,omitempty"`
	FilesTruncated bool       `json:"files_truncated"`
	Unprocessable  int        `json:"unprocessable_items"`
}

// ListWorkspaces returns the caller's workspaces, with the files of each
// active one (at most MaxListFiles).
func (s *Service) ListWorkspaces(ctx context.Context, c caller) ([]Listing, error) {
	all, err := s.ws.Workspaces(ctx, c.tenant, c.agent)
	if err != nil {
		return nil, err
	}
	out := make([]Listing, 0, len(all))
	for _, w := range all {
		l := Listing{WorkspaceID: FormatWorkspaceID(w.ID), Workspace: w, Leased: w.Leased()}
		if w.State == WorkspaceActive {
			files, bad, err := s.ws.Files(ctx, c.tenant, c.agent, w.ID, MaxListFiles+1)
			if err != nil {
				return nil, err
			}
			if len(files) > MaxListFiles {
				files, l.FilesTruncated = files[:MaxListFiles], true
			}
			l.Files, l.Unprocessable = files, bad
		}
		out = append(out, l)
	}
	return out, nil
}

// ReadResult is one file read back, fenced.
type ReadResult struct {
	Path           string   `json:"path"`
	Size           int64    `json:"size"`
	SHA256         string   `json:"sha256"`
	InjectionFlags []string `json:"injection_flags"`
	DataRevision   int64    `json:"data_revision"`
	Fenced         string   `json:"-"`
}

// ReadFile returns one UTF-8 text file of at most MaxFileBytes.
func (s *Service) ReadFile(ctx context.Context, c caller, wsID, path string) (ReadResult, error) {
	id, err := ParseWorkspaceID(wsID)
	if err != nil {
		return ReadResult{}, err
	}
	if err := CheckPath(path); err != nil {
		return ReadResult{}, err
	}
	w, err := s.ws.Workspace(ctx, c.tenant, c.agent, id)
	if err != nil {
		return ReadResult{}, notFound(err)
	}
	if w.State != WorkspaceActive {
		return ReadResult{}, fault.New(fault.Conflict, "workspace %s has expired; its files are gone", wsID)
	}
	f, err := s.ws.File(ctx, c.tenant, c.agent, id, path)
	if fault.Is(err, fault.NotFound) {
		return ReadResult{}, fault.New(fault.NotFound, "no file %q in workspace %s", path, wsID)
	}
	if err != nil {
		return ReadResult{}, err
	}
	if f.Size > MaxFileBytes {
		return ReadResult{}, fault.New(fault.TooLarge, "file %q is %d bytes; at most %d can be read", path, f.Size, MaxFileBytes)
	}
	if !utf8.Valid(f.Content) {
		return ReadResult{}, fault.New(fault.Invalid, "file %q is not UTF-8 text", path)
	}
	flags := s.scanner.Scan(string(f.Content))
	if flags == nil {
		flags = []string{}
	}
	return ReadResult{Path: path, Size: f.Size, SHA256: f.SHA256, InjectionFlags: flags, DataRevision: w.DataRevision,
		Fenced: Fence(path, string(f.Content), flags)}, nil
}

// WriteFile writes one file into the workspace the caller's live session
// attached, atomically.
func (s *Service) WriteFile(ctx context.Context, c caller, wsID, path, content string, args map[string]any, expected *int64) (Workspace, error) {
	id, err := ParseWorkspaceID(wsID)
	if err != nil {
		return Workspace{}, err
	}
	if err := CheckPath(path); err != nil {
		return Workspace{}, err
	}
	if err := CheckWriteRequest(args, content); err != nil {
		return Workspace{}, err
	}
	if _, err := s.ws.Workspace(ctx, c.tenant, c.agent, id); err != nil {
		return Workspace{}, notFound(err)
	}
	sess, err := s.sessions.OpenSession(ctx, c.tenant, c.agent)
	if fault.Is(err, fault.NotFound) {
		return Workspace{}, fault.New(fault.Conflict, "no live session: a workspace is written only through the live session that attached it (computer_session_start with workspace)")
	}
	if err != nil {
		return Workspace{}, err
	}
	switch {
	case sess.State == SessionPaused:
		return Workspace{}, fault.New(fault.Conflict, "your session is paused; writes are refused until it resumes")
	case sess.State != SessionLive:
		return Workspace{}, fault.New(fault.Conflict, "your session is %s; writes need a live session", sess.State)
	case sess.WorkspaceID == nil || *sess.WorkspaceID != id:
		return Workspace{}, fault.New(fault.Conflict, "workspace %s is not the one your live session attached", wsID)
	}
	b := []byte(content)
	w, err := s.ws.PutFile(ctx, Write{TenantID: c.tenant, AgentID: c.agent, WorkspaceID: id, SessionID: sess.ID,
		Path: path, Content: b, SHA256: Digest(b), ExpectedRevision: expected})
	if err != nil || s.driver == nil {
		return w, err
	}
	// The file is saved; the worker holding the session updates its
	// mounted copy. A session whose worker is gone is lost, and the caller
	// hears so, with the file kept.
	f := File{FileInfo: FileInfo{Path: path, Size: int64(len(b)), SHA256: Digest(b)}, Content: b}
	if err := s.driver.Put(ctx, Ref{Tenant: c.tenant, Session: sess.ID, Worker: sess.Worker}, f); wrapLost(err) {
		lost := s.lost(ctx, sess, err)
		return Workspace{}, &tools.EventError{Event: EventLost, Err: fault.New(fault.Unavailable,
			"the file was saved (data_revision %d), but %s", w.DataRevision, fault.Message(lost))}
	} else if err != nil {
		s.log.WarnContext(ctx, "update a session's workspace copy", "session", sess.ID, "err", err)
	}
	return w, nil
}

// attach creates ("new") or leases a workspace for a starting session.
func (s *Service) attach(ctx context.Context, c caller, which string, session uuid.UUID) (Workspace, error) {
	if !c.settings.Capabilities.ComputerUseConfig.Workspace {
		return Workspace{}, fault.New(fault.Forbidden, "workspace needs [capabilities] computer_use_config.workspace")
	}
	if !c.workspacesOn {
		return Workspace{}, errSwitchedOff
	}
	if which == "new" {
		w := Workspace{TenantID: c.tenant, ID: uuid.New(), AgentID: c.agent, State: WorkspaceActive, Quota: DefaultQuota,
			ExpiresAt: s.now().Add(WorkspaceTTL)}
		if err := s.ws.CreateWorkspace(ctx, &w); err != nil {
			return Workspace{}, err
		}
		which = FormatWorkspaceID(w.ID)
	}
	id, err := ParseWorkspaceID(which)
	if err != nil {
		return Workspace{}, err
	}
	w, err := s.ws.Lease(ctx, c.tenant, c.agent, id, session)
	return w, notFound(err)
}
