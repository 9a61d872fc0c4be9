package sandbox_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/plane"
	"github.com/visorhq/visor/services/sandbox"
	"github.com/visorhq/visor/services/tools"
)

// fakePlane answers every call with answer or err; with hold, it waits for
// the call's context to end.
type fakePlane struct {
	answer sandbox.Answer
	err    error
	hold   bool
}

func (p fakePlane) Call(ctx context.Context, _ plane.Request, _ func(plane.Progress)) (json.RawMessage, error) {
	if p.hold {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if p.err != nil {
		return nil, p.err
	}
	return json.Marshal(p.answer)
}

// memLog is a sandbox.RunLog in memory.
type memLog struct {
	mu   sync.Mutex
	runs map[uuid.UUID]sandbox.Run
}

func (l *memLog) StartRun(_ context.Context, r sandbox.Run) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.runs == nil {
		l.runs = map[uuid.UUID]sandbox.Run{}
	}
	r.State = sandbox.RunRunning
	l.runs[r.ID] = r
	return nil
}

func (l *memLog) EndRun(_ context.Context, r sandbox.Run) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs[r.ID] = r
	return nil
}

func (l *memLog) Runs(context.Context, uuid.UUID, sandbox.RunFilter) ([]sandbox.Run, error) {
	return nil, nil
}

func (l *memLog) only(t *testing.T) sandbox.Run {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Len(t, l.runs, 1)
	for _, r := range l.runs {
		return r
	}
	return sandbox.Run{}
}

// TestEveryScriptRunIsLogged: a finished run is logged with its caller,
// image, language, exit code and times; a run the sandbox could not take,
// and one its caller cancelled, are logged with that state. Neither the
// script nor its output is kept.
func TestEveryScriptRunIsLogged(t *testing.T) {
	t.Parallel()
	tenant := identity.Tenant{ID: uuid.New(), Slug: "acme"}
	agent := uuid.New()
	call := func(ctx context.Context, p plane.Caller, images []string) (*memLog, error) {
		tenant := tenant
		tenant.Settings.SandboxImage = "python:3.12"
		log := &memLog{}
		reg := tools.NewRegistry()
		(&sandbox.Tools{Plane: p, Images: images, Log: log}).Register(reg)
		tool, _ := reg.Get("execute_program")
		_, err := tool.Handler(ctx, tools.Call{Subject: &tools.Subject{Tenant: tenant,
			Principal: identity.Principal{TenantID: tenant.ID, Kind: identity.KindEmployee, AgentID: agent, CredentialID: "key:k"}},
			Args: map[string]any{"language": "python", "code": "print('top secret')"}})
		return log, err
	}
	log, err := call(context.Background(), fakePlane{answer: sandbox.Answer{Output: "top secret", ExitCode: 3, RunMS: 120, WaitedMS: 40, Worker: "w1"}},
		[]string{"python:3.12"})
	require.NoError(t, err)
	r := log.only(t)
	require.Equal(t, tenant.ID, r.TenantID)
	require.Equal(t, agent, r.AgentID)
	require.Equal(t, "agent:"+agent.String(), r.Principal)
	require.Equal(t, sandbox.RunFinished, r.State)
	require.Equal(t, "python:3.12", r.Image)
	require.Equal(t, sandbox.Python, r.Language)
	require.Equal(t, 3, r.ExitCode)
	require.EqualValues(t, 120, r.RunMS)
	require.EqualValues(t, 40, r.WaitedMS)
	require.Equal(t, "w1", r.Worker)
	require.NotNil(t, r.EndedAt)
	require.False(t, r.StartedAt.IsZero())
	b, _ := json.Marshal(r)
	require.NotContains(t, string(b), "top secret")

	log, err = call(context.Background(), fakePlane{err: plane.ErrNoWorker}, []string{"python:3.12"})
	require.Error(t, err)
	r = log.only(t)
	require.Equal(t, sandbox.RunUnavailable, r.State)
	require.Contains(t, r.Detail, "no sandbox worker")

	log, err = call(context.Background(), fakePlane{}, []string{"other:1"})
	require.Error(t, err)
	require.Equal(t, sandbox.RunUnavailable, log.only(t).State, "an image off the allow-list is logged too")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	log, err = call(ctx, fakePlane{hold: true}, []string{"python:3.12"})
	require.Error(t, err)
	require.Equal(t, sandbox.RunCancelled, log.only(t).State)
}
