package postgres_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/storage/postgres"
)

// TestWorkspaceSnapshotsAndLease: a snapshot of several chunks comes back
// byte for byte; only the lease holder saves; a live lease refuses
// another worker, a lapsed or dropped one does not; two revisions are
// kept; reset empties it.
func TestWorkspaceSnapshotsAndLease(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewWorkspaceStore(s.db)
	ctx := context.Background()
	ws, err := st.Ensure(ctx, s.a.ID, s.agentA.ID, 1<<30)
	require.NoError(t, err)
	again, err := st.Ensure(ctx, s.a.ID, s.agentA.ID, 1<<30)
	require.NoError(t, err)
	require.Equal(t, ws.ID, again.ID, "one workspace per employee")

	_, err = st.Save(ctx, s.a.ID, ws.ID, "w1", bytes.NewReader([]byte("x")), 1, 1)
	require.True(t, fault.Is(err, fault.Conflict), "a save without the lease: %v", err)
	_, err = st.Lease(ctx, s.a.ID, ws.ID, "w1", time.Minute)
	require.NoError(t, err)
	_, err = st.Lease(ctx, s.a.ID, ws.ID, "w2", time.Minute)
	var held *workspace.HeldError
	require.True(t, errors.As(err, &held), "a live lease refuses another worker: %v", err)
	require.Equal(t, "w1", held.Worker)

	blob := make([]byte, 3*workspace.ChunkBytes+123)
	_, _ = rand.Read(blob)
	for i := 1; i <= 3; i++ {
		rev, err := st.Save(ctx, s.a.ID, ws.ID, "w1", bytes.NewReader(blob), int64(i), i)
		require.NoError(t, err)
		require.Equal(t, int64(i), rev)
	}
	var got bytes.Buffer
	require.NoError(t, st.Load(ctx, s.a.ID, ws.ID, 3, &got))
	require.True(t, bytes.Equal(blob, got.Bytes()), "the snapshot comes back byte for byte")
	require.NoError(t, st.Load(ctx, s.a.ID, ws.ID, 2, &bytes.Buffer{}), "the revision before is kept")
	require.True(t, fault.Is(st.Load(ctx, s.a.ID, ws.ID, 1, &bytes.Buffer{}), fault.NotFound), "older revisions go")
	w, err := st.Get(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Equal(t, int64(3), w.BytesUsed)
	require.Equal(t, int64(len(blob)), w.SnapshotBytes)

	lost, err := st.Renew(ctx, "w2", []uuid.UUID{ws.ID}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{ws.ID}, lost, "w2 holds nothing")
	require.NoError(t, st.Drop(ctx, s.a.ID, ws.ID, "w1"))
	_, err = st.Lease(ctx, s.a.ID, ws.ID, "w2", time.Minute)
	require.NoError(t, err, "a dropped lease is free")
	lost, err = st.Renew(ctx, "w1", []uuid.UUID{ws.ID}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{ws.ID}, lost, "w1 lost it")

	w, err = st.Reset(ctx, s.a.ID, ws.ID)
	require.NoError(t, err)
	require.Zero(t, w.Revision)
	require.Empty(t, w.LeaseWorker)
	require.True(t, fault.Is(st.Load(ctx, s.a.ID, ws.ID, 3, &bytes.Buffer{}), fault.NotFound))
}

// TestWorkspaceIsolation: tenant B gets not-found for everything of
// tenant A's employee: the workspace, its snapshots, lease, reset,
// artifacts and their links, tasks and Skills.
func TestWorkspaceIsolation(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewWorkspaceStore(s.db)
	ctx := context.Background()
	ws, err := st.Ensure(ctx, s.a.ID, s.agentA.ID, 1<<20)
	require.NoError(t, err)
	_, err = st.Lease(ctx, s.a.ID, ws.ID, "w1", time.Minute)
	require.NoError(t, err)
	_, err = st.Save(ctx, s.a.ID, ws.ID, "w1", bytes.NewReader([]byte("snapshot")), 8, 1)
	require.NoError(t, err)

	_, err = st.Get(ctx, s.b.ID, s.agentA.ID)
	require.True(t, fault.Is(err, fault.NotFound), "B reads A's workspace: %v", err)
	_, err = st.Ensure(ctx, s.b.ID, s.agentA.ID, 1<<20)
	require.Error(t, err, "B cannot make a workspace for A's employee")
	_, err = st.Lease(ctx, s.b.ID, ws.ID, "w9", time.Minute)
	require.True(t, fault.Is(err, fault.NotFound), "B leases A's workspace: %v", err)
	_, err = st.Save(ctx, s.b.ID, ws.ID, "w1", bytes.NewReader([]byte("x")), 1, 1)
	require.Error(t, err, "B saves into A's workspace")
	require.True(t, fault.Is(st.Load(ctx, s.b.ID, ws.ID, 1, &bytes.Buffer{}), fault.NotFound), "B loads A's snapshot")
	_, err = st.Reset(ctx, s.b.ID, ws.ID)
	require.True(t, fault.Is(err, fault.NotFound), "B resets A's workspace: %v", err)
	list, err := st.List(ctx, s.b.ID)
	require.NoError(t, err)
	require.Empty(t, list)
	before, err := st.Get(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.NoError(t, st.Release(ctx, s.b.ID, ws.ID, "w1"))
	require.NoError(t, st.Drop(ctx, s.b.ID, ws.ID, "w1"))
	require.NoError(t, st.Touch(ctx, s.b.ID, ws.ID))
	after, err := st.Get(ctx, s.a.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Equal(t, "w1", after.LeaseWorker, "B's release or drop leaves A's lease")
	require.True(t, after.Leased(time.Now()))
	require.Equal(t, before.LastUsedAt, after.LastUsedAt, "B's touch leaves A's workspace")
	require.Error(t, st.PutArtifact(ctx, workspace.Artifact{TenantID: s.b.ID, AgentID: s.agentA.ID, ID: uuid.New(), Name: "x", MediaType: "text/plain",
		SHA256: "00", Size: 1, CreatedAt: time.Now().UTC()}, []byte("x")), "B files an artifact under A's employee")

	art := workspace.Artifact{TenantID: s.a.ID, AgentID: s.agentA.ID, ID: uuid.New(), Name: "r.txt", MediaType: "text/plain", SHA256: "00", Size: 2,
		CreatedAt: time.Now().UTC()}
	require.NoError(t, st.PutArtifact(ctx, art, []byte("hi")))
	require.NoError(t, st.AddLink(ctx, s.a.ID, art.ID, "tokenhash", time.Now().Add(time.Hour)))
	_, _, err = st.Artifact(ctx, s.b.ID, art.ID, true)
	require.True(t, fault.Is(err, fault.NotFound), "B reads A's artifact: %v", err)
	_, _, err = st.ByLink(ctx, s.b.ID, "tokenhash", time.Now())
	require.True(t, fault.Is(err, fault.NotFound), "A's link under B's tenant: %v", err)
	_, b, err := st.ByLink(ctx, s.a.ID, "tokenhash", time.Now())
	require.NoError(t, err)
	require.Equal(t, "hi", string(b))
	_, _, err = st.ByLink(ctx, s.a.ID, "tokenhash", time.Now().Add(2*time.Hour))
	require.True(t, fault.Is(err, fault.NotFound), "an expired link: %v", err)
	arts, err := st.Artifacts(ctx, s.b.ID, uuid.Nil, 10)
	require.NoError(t, err)
	require.Empty(t, arts)

	task := &workspace.Task{TenantID: s.a.ID, AgentID: s.agentA.ID, ID: uuid.New(), Title: "t", State: workspace.TaskActive}
	require.NoError(t, st.CreateTask(ctx, task))
	_, err = st.Task(ctx, s.b.ID, s.agentA.ID, task.ID)
	require.True(t, fault.Is(err, fault.NotFound), "B reads A's task: %v", err)
	_, err = st.Task(ctx, s.a.ID, uuid.New(), task.ID)
	require.True(t, fault.Is(err, fault.NotFound), "another employee reads A's task: %v", err)
	_, err = st.UpdateTask(ctx, s.b.ID, s.agentA.ID, task.ID, func(*workspace.Task) error { return nil })
	require.True(t, fault.Is(err, fault.NotFound), "B updates A's task: %v", err)
	tasks, err := st.Tasks(ctx, s.b.ID, s.agentA.ID, "", 10)
	require.NoError(t, err)
	require.Empty(t, tasks, "B lists A's tasks")
	tasks, err = st.Tasks(ctx, s.a.ID, s.agentA.ID, "", 10)
	require.NoError(t, err)
	require.Len(t, tasks, 1)
	require.Error(t, st.CreateTask(ctx, &workspace.Task{TenantID: s.b.ID, AgentID: s.agentA.ID, ID: uuid.New(), Title: "t", State: workspace.TaskActive}),
		"B files a task under A's employee")

	_, err = st.AddSkill(ctx, s.a.ID, workspace.Skill{AgentID: s.agentA.ID, Name: "deploy", Description: "ship it", SHA256: "00", Size: 1}, []byte("x"))
	require.NoError(t, err)
	_, err = st.ActiveSkill(ctx, s.b.ID, s.agentA.ID, "deploy")
	require.True(t, fault.Is(err, fault.NotFound), "B reads A's Skill: %v", err)
	_, err = st.SkillArchive(ctx, s.b.ID, s.agentA.ID, "deploy", 1)
	require.True(t, fault.Is(err, fault.NotFound))
	skills, err := st.Skills(ctx, s.b.ID, s.agentA.ID)
	require.NoError(t, err)
	require.Empty(t, skills, "B lists A's Skills")
	err = st.ActivateSkill(ctx, s.b.ID, s.agentA.ID, "deploy", 1)
	require.True(t, fault.Is(err, fault.NotFound), "B activates A's Skill: %v", err)
	_, err = st.AddSkill(ctx, s.b.ID, workspace.Skill{AgentID: s.agentA.ID, Name: "sneak", Description: "x", SHA256: "00", Size: 1}, []byte("x"))
	require.Error(t, err, "B installs a Skill for A's employee")
	bank, err := st.BankSkills(ctx, s.b.ID, "deploy", 10)
	require.NoError(t, err)
	require.Empty(t, bank, "B's bank holds none of A's Skills")
	bank, err = st.BankSkills(ctx, s.a.ID, "SHIP", 10)
	require.NoError(t, err)
	require.Len(t, bank, 1)
	require.NoError(t, st.SetSkillEnv(ctx, s.a.ID, s.agentA.ID, "deploy", workspace.EnvVar{Name: "TOKEN", Sealed: "v1.x"}))
	vars, err := st.SkillEnv(ctx, s.b.ID, s.agentA.ID, "")
	require.NoError(t, err)
	require.Empty(t, vars)
	removed, err := st.UnsetSkillEnv(ctx, s.b.ID, s.agentA.ID, "deploy", "TOKEN")
	require.NoError(t, err)
	require.False(t, removed)
}

// TestSkillEnvRewrap: visor secrets rotate re-wraps Skill variables under
// the new first key, and they still open.
func TestSkillEnvRewrap(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewWorkspaceStore(s.db)
	ctx := context.Background()
	k1, err := secrets.NewKey("k1")
	require.NoError(t, err)
	k2, err := secrets.NewKey("k2")
	require.NoError(t, err)
	old, err := secrets.ParseKeyring(k1)
	require.NoError(t, err)
	both, err := secrets.ParseKeyring(k2 + "," + k1)
	require.NoError(t, err)
	sealed, err := old.Seal([]byte("tok-123"), "ctx")
	require.NoError(t, err)
	require.NoError(t, st.SetSkillEnv(ctx, s.a.ID, s.agentA.ID, "deploy", workspace.EnvVar{Name: "TOKEN", Sealed: sealed}))
	n, err := secrets.Rotate(ctx, both, st)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	vars, err := st.SkillEnv(ctx, s.a.ID, s.agentA.ID, "deploy")
	require.NoError(t, err)
	id, err := secrets.KeyID(vars[0].Sealed)
	require.NoError(t, err)
	require.Equal(t, "k2", id)
	plain, err := both.Open(vars[0].Sealed, "ctx")
	require.NoError(t, err)
	require.Equal(t, "tok-123", string(plain))
}

// TestTrackedTaskLinksOnlyItsTenantsBoardTask: a tracked task links to a
// board task of its own tenant; another tenant's board task, or one that
// does not exist, is not found and nothing is stored.
func TestTrackedTaskLinksOnlyItsTenantsBoardTask(t *testing.T) {
	t.Parallel()
	s := setup(t)
	st := postgres.NewWorkspaceStore(s.db)
	bs := postgres.NewBoardStore(s.db)
	ctx := context.Background()
	own, foreign := newTask(s.a.ID, uuid.Nil, "ours"), newTask(s.b.ID, uuid.Nil, "theirs")
	require.NoError(t, bs.CreateTask(ctx, own, board.Effects{}, 10))
	require.NoError(t, bs.CreateTask(ctx, foreign, board.Effects{}, 10))
	track := func(link *uuid.UUID) error {
		return st.CreateTask(ctx, &workspace.Task{TenantID: s.a.ID, AgentID: s.agentA.ID, ID: uuid.New(), Title: "t",
			State: workspace.TaskActive, BoardTaskID: link})
	}
	require.NoError(t, track(&own.ID))
	missing := uuid.New()
	for _, id := range []uuid.UUID{foreign.ID, missing} {
		err := track(&id)
		require.True(t, fault.Is(err, fault.NotFound), "link to %s: %v", id, err)
	}
	require.NoError(t, track(nil))
	tasks, err := st.Tasks(ctx, s.a.ID, s.agentA.ID, "", 10)
	require.NoError(t, err)
	require.Len(t, tasks, 2, "the refused links stored nothing")
}
