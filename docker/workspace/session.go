package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/visorhq/visor/services/fault"
	domain "github.com/visorhq/visor/services/workspace"
)

// session is one command run in a workspace's container.
type session struct {
	id      string
	cmd     string
	tty     bool
	started time.Time
	conn    types.HijackedResponse
	// redact, when not nil, takes the employee's Skill variable values
	// out of the output before it is kept.
	redact *streamRedactor

	mu       sync.Mutex
	out      []byte // the kept tail of the output
	base     int64  // offset of out[0] in the whole output
	changed  chan struct{}
	ended    time.Time
	exitCode int
	cause    string // why it ended other than by exiting: timed out, killed
	done     chan struct{}
}

func (s *session) running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Write keeps output (redacted), dropping the oldest beyond
// MaxOutputKept.
func (s *session) Write(p []byte) (int, error) {
	s.mu.Lock()
	s.keep(p, false)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
	return len(p), nil
}

// keep adds p to the kept output; final flushes what the redactor held
// back. s.mu is held.
func (s *session) keep(p []byte, final bool) {
	if s.redact != nil {
		p = s.redact.feed(p, final)
	}
	s.out = append(s.out, p...)
	if over := len(s.out) - domain.MaxOutputKept; over > 0 {
		s.out = append(s.out[:0:0], s.out[over:]...)
		s.base += int64(over)
	}
}

// view is the session from cursor on, at most max bytes of output.
func (s *session) view(cursor int64, max int) domain.SessionView {
	if max <= 0 {
		max = domain.DefaultReadBytes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.base + int64(len(s.out))
	v := domain.SessionView{SessionID: s.id, Cmd: s.cmd, TTY: s.tty, StartedAt: s.started, Status: domain.Running, OutputBytes: total}
	if cursor < s.base {
		v.Dropped = s.base - cursor
		cursor = s.base
	}
	cursor = min(cursor, total)
	end := min(total, cursor+int64(max))
	v.Output = string(s.out[cursor-s.base : end-s.base])
	v.Cursor, v.NextCursor, v.OutputTruncated = cursor, end, end < total
	if s.ended.IsZero() {
		v.DurationMS = time.Since(s.started).Milliseconds()
		return v
	}
	v.Status, v.EndedAt, v.DurationMS = domain.Exited, s.ended, s.ended.Sub(s.started).Milliseconds()
	code, ok := s.exitCode, s.exitCode == 0 && s.cause == ""
	v.ExitCode, v.CommandOK = &code, &ok
	switch {
	case s.cause != "":
		v.CommandError = s.cause
	case code != 0:
		v.CommandError = "exit status " + strconv.Itoa(code)
	}
	return v
}

// end records how the command ended, once.
func (s *session) end(code int, cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended.IsZero() {
		return
	}
	if s.redact != nil {
		s.keep(nil, true)
	}
	s.ended, s.exitCode = time.Now(), code
	if s.cause == "" {
		s.cause = cause
	}
	close(s.done)
	close(s.changed)
	s.changed = make(chan struct{})
}

// setCause notes why the command is being stopped, before it ends.
func (s *session) setCause(c string) {
	s.mu.Lock()
	if s.cause == "" && s.ended.IsZero() {
		s.cause = c
	}
	s.mu.Unlock()
}

// abandon cuts the stream of a session whose container is going away.
func (s *session) abandon() {
	s.setCause("the workspace was stopped")
	s.conn.Close()
}

func newSessionID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "s-" + hex.EncodeToString(b)
}

// pidFile is where a session's shell writes its process group id.
func pidFile(id string) string { return "/tmp/.visor-" + id + ".pid" }

// exec starts a command and waits for it up to WaitMS: an ended command is
// answered with its result, a running one with its session id.
func (h *held) exec(ctx context.Context, m *Manager, a domain.ExecArgs) (domain.Answer, error) {
	if err := a.Check(); err != nil {
		return domain.Answer{}, err
	}
	if err := h.roomForSession(); err != nil {
		return domain.Answer{}, err
	}
	workdir := domain.MountPath
	if a.Skill != "" {
		dir, err := m.skillDir(ctx, h, a.Skill, a.SkillRev)
		if err != nil {
			return domain.Answer{}, err
		}
		workdir = dir
		if a.Env, err = domain.OpenSkillEnv(ctx, m.stores.Skills, m.cfg.Keys, h.ref.Tenant, h.ref.Agent, a.Skill); err != nil {
			return domain.Answer{}, err
		}
	}
	if a.Workdir != "" {
		rel, _ := domain.CleanPath(a.Workdir)
		if st, err := h.tree.Root.Stat(rel); err != nil || !st.IsDir() {
			return domain.Answer{}, fault.New(fault.NotFound, "workdir %s is not a folder of the workspace", rel)
		}
		workdir = domain.MountPath + "/" + rel
	}
	s, err := m.startSession(ctx, h, a, workdir)
	if err != nil {
		return domain.Answer{}, err
	}
	select {
	case <-s.done:
	case <-time.After(time.Duration(a.WaitMS) * time.Millisecond):
	case <-ctx.Done():
	}
	v := s.view(0, domain.DefaultReadBytes)
	u := h.measure()
	return domain.Answer{Session: &v, Usage: &u}, nil
}

func (h *held) roomForSession() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	var oldest *session
	for _, s := range h.sessions {
		if !s.running() && time.Since(s.ended) > domain.KeepFinished {
			delete(h.sessions, s.id)
		}
	}
	for _, s := range h.sessions {
		if !s.running() && (oldest == nil || s.ended.Before(oldest.ended)) {
			oldest = s
		}
	}
	if len(h.sessions) >= domain.MaxSessions {
		if oldest == nil {
			return fault.New(fault.RateLimited, "%d commands are running in this workspace; wait for one or kill one with session_act", domain.MaxSessions)
		}
		delete(h.sessions, oldest.id)
	}
	return nil
}

// startSession runs the command in its own process group (setsid), whose
// id the shell records so session_act and the timeout can end the whole
// group.
func (m *Manager) startSession(ctx context.Context, h *held, a domain.ExecArgs, workdir string) (*session, error) {
	var values map[string]string
	if m.stores.Skills != nil {
		var err error
		if values, err = domain.RedactedValues(ctx, m.stores.Skills, m.cfg.Keys, h.ref.Tenant, h.ref.Agent); err != nil {
			return nil, err
		}
	}
	id := newSessionID()
	env := []string{"WORKSPACE_COMMAND=" + a.Cmd}
	for k, v := range a.Env {
		env = append(env, k+"="+v)
	}
	script := `echo $$ > ` + pidFile(id) + `; exec /bin/sh -c "$WORKSPACE_COMMAND"`
	cfg := container.ExecOptions{User: userSpec(), Tty: a.TTY, AttachStdin: true, AttachStdout: true, AttachStderr: true,
		Env: env, WorkingDir: workdir, Cmd: []string{"setsid", "-w", "/bin/sh", "-c", script}}
	ex, err := m.cli.ContainerExecCreate(ctx, h.container, cfg)
	if err != nil {
		return nil, fault.Newf(fault.Unavailable, err, "the command could not be started in the workspace container")
	}
	conn, err := m.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{Tty: a.TTY})
	if err != nil {
		return nil, fault.Newf(fault.Unavailable, err, "the command could not be attached")
	}
	s := &session{id: id, cmd: clipCmd(a.Cmd), tty: a.TTY, started: time.Now(), conn: conn, changed: make(chan struct{}), done: make(chan struct{}),
		redact: newStreamRedactor(values)}
	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
	go m.follow(h, s, ex.ID, time.Duration(a.TimeoutMS)*time.Millisecond)
	return s, nil
}

// follow copies the output until the command ends or its timeout passes,
// then records its exit code.
func (m *Manager) follow(h *held, s *session, execID string, timeout time.Duration) {
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if s.tty {
			_, _ = io.Copy(s, s.conn.Reader)
		} else {
			_, _ = stdcopy.StdCopy(s, s, s.conn.Reader)
		}
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-copied:
	case <-timer.C:
		s.setCause(fmt.Sprintf("timed out after %s; the command was killed", timeout))
		m.kill(h, s)
		select {
		case <-copied:
		case <-time.After(5 * time.Second):
			s.conn.Close()
			<-copied
		}
	}
	s.conn.Close()
	code := -1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 50 { // the exec's state may lag the end of its stream
		st, err := m.cli.ContainerExecInspect(ctx, execID)
		if err != nil || !st.Running {
			if err == nil {
				code = st.ExitCode
			}
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.end(code, "")
	h.markDirty()
}

// kill ends the session's whole process group.
func (m *Manager) kill(h *held, s *session) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	script := `p=$(cat ` + pidFile(s.id) + ` 2>/dev/null) && kill -KILL -- -"$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null; true`
	ex, err := m.cli.ContainerExecCreate(ctx, h.container, container.ExecOptions{User: userSpec(), Cmd: []string{"/bin/sh", "-c", script}})
	if err == nil {
		err = m.cli.ContainerExecStart(ctx, ex.ID, container.ExecStartOptions{})
	}
	if err != nil {
		m.log.Warn("kill a workspace session", "workspace", h.ref.ID, "session", s.id, "err", err)
	}
}

// observe lists the sessions, or shows one from a cursor, waiting up to
// WaitMS for new output or its end.
func (h *held) observe(ctx context.Context, a domain.ObserveArgs) (domain.Answer, error) {
	switch a.Action {
	case "list", "":
		return domain.Answer{Sessions: h.views()}, nil
	case "status":
	default:
		return domain.Answer{}, fault.New(fault.Invalid, "action must be list or status")
	}
	s, err := h.session(a.SessionID)
	if err != nil {
		return domain.Answer{}, err
	}
	if a.MaxBytes < 0 || a.MaxBytes > domain.MaxOutputRead || a.Cursor < 0 {
		return domain.Answer{}, fault.New(fault.Invalid, "max_bytes must be 0-%d and cursor positive", domain.MaxOutputRead)
	}
	if a.WaitMS < 0 || time.Duration(a.WaitMS)*time.Millisecond > domain.MaxWait {
		return domain.Answer{}, fault.New(fault.Invalid, "wait_ms must be 0-%d", domain.MaxWait.Milliseconds())
	}
	s.mu.Lock()
	changed, has := s.changed, s.base+int64(len(s.out)) > a.Cursor
	s.mu.Unlock()
	if !has && s.running() && a.WaitMS > 0 {
		select {
		case <-changed:
		case <-time.After(time.Duration(a.WaitMS) * time.Millisecond):
		case <-ctx.Done():
		}
	}
	v := s.view(a.Cursor, a.MaxBytes)
	return domain.Answer{Session: &v}, nil
}

func (h *held) session(id string) (*session, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil {
		return nil, fault.New(fault.NotFound, "session %q not found in your workspace (finished sessions are kept %s)", clipCmd(id), domain.KeepFinished)
	}
	return s, nil
}

// act writes input to a session or kills one or all.
func (h *held) act(ctx context.Context, m *Manager, a domain.ActArgs) (domain.Answer, error) {
	res := domain.ActResult{Action: a.Action, Killed: []string{}}
	switch a.Action {
	case "write":
		s, err := h.session(a.SessionID)
		if err != nil {
			return domain.Answer{}, err
		}
		if len(a.Input) > domain.MaxInputBytes {
			return domain.Answer{}, fault.New(fault.TooLarge, "input must be at most %d bytes", domain.MaxInputBytes)
		}
		if !s.running() {
			return domain.Answer{}, fault.New(fault.Conflict, "session %s has ended; it takes no input", s.id)
		}
		n, err := s.conn.Conn.Write([]byte(a.Input))
		if err != nil {
			return domain.Answer{}, fault.Newf(fault.Conflict, err, "session %s no longer takes input", s.id)
		}
		if a.CloseIn {
			_ = s.conn.CloseWrite()
		}
		res.Written = n
	case "kill":
		s, err := h.session(a.SessionID)
		if err != nil {
			return domain.Answer{}, err
		}
		if s.running() {
			s.setCause("killed by session_act")
			m.kill(h, s)
			res.Killed = append(res.Killed, s.id)
			waitEnd(ctx, s)
		}
	case "kill_all":
		h.mu.Lock()
		var list []*session
		for _, s := range h.sessions {
			if s.running() {
				list = append(list, s)
			}
		}
		h.mu.Unlock()
		for _, s := range list {
			s.setCause("killed by session_act")
			m.kill(h, s)
			res.Killed = append(res.Killed, s.id)
		}
		for _, s := range list {
			waitEnd(ctx, s)
		}
	default:
		return domain.Answer{}, fault.New(fault.Invalid, "action must be write, kill or kill_all")
	}
	return domain.Answer{Act: &res}, nil
}

func waitEnd(ctx context.Context, s *session) {
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
	case <-ctx.Done():
	}
}

func userSpec() string {
	uid, gid := containerUser()
	return strconv.Itoa(uid) + ":" + strconv.Itoa(gid)
}

func clipCmd(c string) string {
	if len(c) <= 200 {
		return c
	}
	return string(bytes.ToValidUTF8([]byte(c[:200]), nil)) + "…"
}

func removeAll(dir string) error { return os.RemoveAll(dir) }
