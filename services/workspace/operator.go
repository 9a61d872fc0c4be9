package workspace

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"

	"github.com/google/uuid"
)

// Overview is a workspace as the operator's dashboard lists it.
type Overview struct {
	Workspace
	Live bool `json:"live"` // a worker holds it now
}

// Workspaces lists the tenant's workspaces.
func (s *Service) Workspaces(ctx context.Context, tenantID uuid.UUID) ([]Overview, error) {
	list, err := s.cfg.Store.List(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now()
	out := make([]Overview, 0, len(list))
	for _, w := range list {
		out = append(out, Overview{Workspace: w, Live: w.Leased(now)})
	}
	return out, nil
}

// Detail is one employee's workspace for an operator: usage, the files of
// its last saved revision (at most MaxDetailFiles), its command sessions
// when a worker holds it, and its artifacts. Contents are never shown.
type Detail struct {
	Workspace      Workspace     `json:"workspace"`
	Live           bool          `json:"live"`
	Files          []Entry       `json:"files"`
	FilesTruncated bool          `json:"files_truncated"`
	Sessions       []SessionView `json:"sessions"`
	Artifacts      []Artifact    `json:"artifacts"`
}

// MaxDetailFiles bounds the files a Detail lists.
const MaxDetailFiles = 500

// Detail returns the employee's workspace. NotFound when it has none.
func (s *Service) Detail(ctx context.Context, tenantID, agentID uuid.UUID) (Detail, error) {
	ws, err := s.cfg.Store.Get(ctx, tenantID, agentID)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Workspace: ws, Live: ws.Leased(s.cfg.Now()), Files: []Entry{}, Sessions: []SessionView{}}
	if d.Files, d.FilesTruncated, err = s.snapshotFiles(ctx, ws); err != nil {
		return Detail{}, err
	}
	if d.Live && s.cfg.Runner != nil {
		a, err := s.cfg.Runner.Held(ctx, ws, s.ref(ws), Op{Observe: &ObserveArgs{Action: "list"}})
		switch {
		case err == nil:
			d.Sessions = a.Sessions
			for i := range d.Sessions {
				d.Sessions[i].Cmd = "" // commands may hold what the employee typed; operators see states and sizes
			}
		case errors.Is(err, ErrNotHeld):
			d.Live = false
		default:
			s.cfg.Log.Warn("list a workspace's sessions", "workspace", ws.ID, "err", err)
		}
	}
	if d.Artifacts, err = s.cfg.Artifacts.Artifacts(ctx, tenantID, agentID, 100); err != nil {
		return Detail{}, err
	}
	return d, nil
}

func (s *Service) ref(ws Workspace) Ref {
	return Ref{Tenant: ws.TenantID, Agent: ws.AgentID, ID: ws.ID, Quota: ws.Quota}
}

// snapshotFiles lists the entries of the last saved revision.
func (s *Service) snapshotFiles(ctx context.Context, ws Workspace) ([]Entry, bool, error) {
	out := []Entry{}
	if ws.Revision == 0 {
		return out, false, nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(s.cfg.Store.Load(ctx, ws.TenantID, ws.ID, ws.Revision, pw)) }()
	defer pr.Close()
	gz, err := gzip.NewReader(pr)
	if err != nil {
		return nil, false, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if len(out) >= MaxDetailFiles {
			return out, true, nil
		}
		e := Entry{Path: h.Name, Type: "file", Size: h.Size}
		switch h.Typeflag {
		case tar.TypeDir:
			e.Type, e.Size = "dir", 0
		case tar.TypeSymlink:
			e.Type = "symlink"
		}
		out = append(out, e)
	}
}

// StopSessions kills every command running in the employee's workspace;
// it returns the sessions killed (none when no worker holds it).
func (s *Service) StopSessions(ctx context.Context, tenantID, agentID uuid.UUID) ([]string, error) {
	ws, err := s.cfg.Store.Get(ctx, tenantID, agentID)
	if err != nil {
		return nil, err
	}
	if s.cfg.Runner == nil || !ws.Leased(s.cfg.Now()) {
		return []string{}, nil
	}
	a, err := s.cfg.Runner.Held(ctx, ws, s.ref(ws), Op{Act: &ActArgs{Action: "kill_all"}})
	if errors.Is(err, ErrNotHeld) {
		return []string{}, nil
	}
	if err != nil {
		return nil, err
	}
	return a.Act.Killed, nil
}

// Reset empties the employee's workspace: its container (if running)
// stops without saving, and every saved revision goes. Artifacts stay.
func (s *Service) Reset(ctx context.Context, tenantID, agentID uuid.UUID) (Workspace, error) {
	ws, err := s.cfg.Store.Get(ctx, tenantID, agentID)
	if err != nil {
		return Workspace{}, err
	}
	if s.cfg.Runner != nil && ws.Leased(s.cfg.Now()) {
		if _, err := s.cfg.Runner.Held(ctx, ws, s.ref(ws), Op{Reset: true}); err != nil && !errors.Is(err, ErrNotHeld) {
			return Workspace{}, err
		}
	}
	return s.cfg.Store.Reset(ctx, tenantID, ws.ID)
}
