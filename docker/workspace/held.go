package workspace

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/visorhq/visor/docker/egressproxy"
	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/workspace"
)

// held is one workspace this worker holds.
type held struct {
	ref  domain.Ref
	ws   domain.Workspace
	dir  string
	tree *domain.Tree
	// mounted: the tree is on a filesystem of the quota's size.
	mounted bool

	container string
	network   string
	proxy     *egressproxy.Proxy
	allowed   []string

	mu       sync.Mutex
	sessions map[string]*session
	pins     int // browser sessions that mount the tree (Pin)
	lastUsed time.Time
	dirty    bool
	usage    domain.Usage
}

func (h *held) touch() {
	h.mu.Lock()
	h.lastUsed = time.Now()
	h.mu.Unlock()
}

func (h *held) markDirty() {
	h.mu.Lock()
	h.dirty = true
	h.mu.Unlock()
}

func (h *held) takeDirty() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	d := h.dirty
	h.dirty = false
	return d
}

func (h *held) setUsage(bytes int64, files int, rev int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage = domain.Usage{Bytes: bytes, Files: files, Quota: h.ref.Quota}
	if rev > 0 {
		h.ws.Revision = rev
	}
}

// setQuota notes a changed quota, reporting whether it changed. (A
// changed allow list takes effect when the container next starts: the
// proxy's pins are fixed at start.)
func (h *held) setQuota(ref domain.Ref) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	changed := ref.Quota > 0 && ref.Quota != h.ref.Quota
	if changed {
		h.ref.Quota = ref.Quota
	}
	return changed
}

// idle reports whether the workspace had no call for d and runs nothing.
func (h *held) idle(d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if time.Since(h.lastUsed) < d || h.pins > 0 {
		return false
	}
	for _, s := range h.sessions {
		if s.running() {
			return false
		}
	}
	return true
}

// endSessions kills the running commands and waits briefly for their
// ends; it reports whether any was running.
func (h *held) endSessions(m *Manager) bool {
	h.mu.Lock()
	var list []*session
	for _, s := range h.sessions {
		if s.running() {
			list = append(list, s)
		}
	}
	h.mu.Unlock()
	for _, s := range list {
		s.setCause("the workspace was stopped")
		m.kill(h, s)
	}
	for _, s := range list {
		select {
		case <-s.done:
		case <-time.After(5 * time.Second):
		}
	}
	return len(list) > 0
}

// measure walks the tree for its usage.
func (h *held) measure() domain.Usage {
	b, f, _ := h.tree.Usage()
	h.setUsage(b, f, 0)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.usage
}

// do runs one op.
func (h *held) do(ctx context.Context, m *Manager, op domain.Op) (domain.Answer, error) {
	switch {
	case op.Read != nil:
		r, err := h.tree.Read(*op.Read)
		return domain.Answer{Read: &r}, err
	case op.List != nil:
		r, err := h.tree.List(*op.List)
		return domain.Answer{List: &r}, err
	case op.Search != nil:
		r, err := h.tree.Search(*op.Search)
		return domain.Answer{Search: &r}, err
	case op.Edit != nil:
		return h.edit(*op.Edit)
	case op.Exec != nil:
		return h.exec(ctx, m, *op.Exec)
	case op.Observe != nil:
		return h.observe(ctx, *op.Observe)
	case op.Act != nil:
		return h.act(ctx, m, *op.Act)
	case op.Fetch != nil:
		return h.fetch(*op.Fetch)
	case op.Pack != nil:
		return h.pack(ctx, m, *op.Pack)
	case op.Status:
		return domain.Answer{Status: h.status(m), Usage: ptr(h.measure())}, nil
	case op.Stop, op.Reset:
		if h.pinned() {
			return domain.Answer{}, ErrPinned
		}
		return domain.Answer{}, m.close(ctx, h, op.Reset)
	}
	return domain.Answer{}, fault.New(fault.Invalid, "empty workspace call")
}

func (h *held) edit(a domain.EditArgs) (domain.Answer, error) {
	u := h.measure()
	room := u.Quota - u.Bytes
	if h.mounted { // the filesystem also counts each file's last page
		if _, free, err := fsUse(filesDir(h.dir)); err == nil {
			room = min(room, free)
		}
	}
	r, err := h.tree.Edit(a, room)
	if err != nil {
		return domain.Answer{}, err
	}
	if r.Written {
		h.markDirty()
		u.Bytes += r.Delta
		h.setUsage(u.Bytes, u.Files, 0)
	}
	return domain.Answer{Edit: &r, Usage: &u}, nil
}

func (h *held) fetch(a domain.FetchArgs) (domain.Answer, error) {
	rel, err := domain.CleanPath(a.Path)
	if err != nil {
		return domain.Answer{}, err
	}
	if a.Folder {
		sub, err := h.tree.Root.OpenRoot(rel)
		if err != nil {
			return domain.Answer{}, domain.FileError(rel, err)
		}
		defer sub.Close()
		var buf bytes.Buffer
		if _, _, err := domain.Pack(sub, &limited{w: &buf, n: a.Max}); err != nil {
			if fault.Is(err, fault.TooLarge) {
				return domain.Answer{}, fault.New(fault.TooLarge, "%s packs to more than %d bytes", rel, a.Max)
			}
			return domain.Answer{}, err
		}
		return domain.Answer{Fetch: &domain.FetchResult{Path: rel, Data: buf.Bytes()}}, nil
	}
	f, err := h.tree.Root.Open(rel)
	if err != nil {
		return domain.Answer{}, domain.FileError(rel, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.IsDir() {
		return domain.Answer{}, fault.New(fault.Invalid, "%s is not a file", rel)
	}
	if st.Size() > a.Max {
		return domain.Answer{}, fault.New(fault.TooLarge, "%s holds %d bytes; at most %d may be read here", rel, st.Size(), a.Max)
	}
	b, err := io.ReadAll(io.LimitReader(f, a.Max))
	return domain.Answer{Fetch: &domain.FetchResult{Path: rel, Data: b}}, err
}

func (h *held) status(m *Manager) *domain.HostStatus {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.sessions {
		if s.running() {
			n++
		}
	}
	return &domain.HostStatus{Worker: m.cfg.WorkerID, Container: h.container, Running: n, Dirty: h.dirty}
}

// views lists the sessions, newest first.
func (h *held) views() []domain.SessionView {
	h.mu.Lock()
	list := make([]*session, 0, len(h.sessions))
	for _, s := range h.sessions {
		list = append(list, s)
	}
	h.mu.Unlock()
	slices.SortFunc(list, func(a, b *session) int { return b.started.Compare(a.started) })
	out := make([]domain.SessionView, 0, len(list))
	for _, s := range list {
		v := s.view(0, 0)
		v.Output, v.NextCursor = "", v.OutputBytes
		out = append(out, v)
	}
	return out
}

func ptr[T any](v T) *T { return &v }
