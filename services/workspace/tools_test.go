package workspace_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/services/workspace/workspacetest"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/postgres/pgtest"
)

type fixture struct {
	db       *postgres.DB
	reg      *tools.Registry
	ada, bob *tools.Subject
	gil      *tools.Subject // another tenant's employee
	store    *postgres.WorkspaceStore
}

func newFixture(t *testing.T, opts ...func(*workspace.Config)) *fixture {
	t.Helper()
	db := pgtest.New(t)
	ids := identity.NewService(postgres.NewIdentityStore(db), changes.Discard{}, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	acme, err := ids.CreateTenant(ctx, "acme", "Acme")
	require.NoError(t, err)
	globex, err := ids.CreateTenant(ctx, "globex", "Globex")
	require.NoError(t, err)
	subject := func(tn identity.Tenant, name string) *tools.Subject {
		a, err := ids.CreateAgent(ctx, tn.ID, identity.NewAgent{Name: name})
		require.NoError(t, err)
		return &tools.Subject{Tenant: tn, Agent: &a, Principal: identity.Principal{TenantID: tn.ID, TenantSlug: tn.Slug, Kind: identity.KindEmployee, AgentID: a.ID}}
	}
	k, err := secrets.NewKey("k1")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(k)
	require.NoError(t, err)
	st := postgres.NewWorkspaceStore(db)
	cfg := workspace.Config{Store: st, Tasks: st, Skills: st, Artifacts: st, Keys: keys}
	for _, o := range opts {
		o(&cfg)
	}
	svc := workspace.NewService(cfg)
	reg := tools.NewRegistry()
	svc.Register(reg)
	return &fixture{db: db, reg: reg, store: st, ada: subject(acme, "ada"), bob: subject(acme, "bob"), gil: subject(globex, "gil")}
}

func (f *fixture) call(t *testing.T, sub *tools.Subject, name string, args map[string]any) (*tools.Result, map[string]any, error) {
	t.Helper()
	tool, ok := f.reg.Get(name)
	require.True(t, ok)
	raw, _ := json.Marshal(args)
	res, err := tool.Handler(context.Background(), tools.Call{Subject: sub, Name: name, Raw: raw})
	if err != nil {
		return nil, nil, err
	}
	var m map[string]any
	b, _ := json.Marshal(res.Structured)
	require.NoError(t, json.Unmarshal(b, &m))
	workspacetest.NoGenericOK(t, m)
	return res, m, nil
}

// TestTaskManage: the whole life of a tracked task, complete refused
// without evidence, and tasks private to their employee and tenant.
func TestTaskManage(t *testing.T) {
	f := newFixture(t)
	boardTask := func(tenant uuid.UUID) uuid.UUID {
		bt := &board.Task{ID: uuid.New(), TenantID: tenant, Kind: board.KindTask, Title: "round", Status: board.Open,
			CreatorKind: board.ByOperator, CreatedBy: "operator:k", Origin: board.Direct, Tags: []string{}}
		require.NoError(t, postgres.NewBoardStore(f.db).CreateTask(context.Background(), bt, board.Effects{}, 10))
		return bt.ID
	}
	round := boardTask(f.ada.Principal.TenantID)
	f.ada.Principal.TaskID = round
	_, m, err := f.call(t, f.ada, "task_manage", map[string]any{"action": "create", "title": "Fix add", "steps": []string{"reproduce", "fix", "test"}})
	require.NoError(t, err)
	id := m["task_id"].(string)
	require.Equal(t, round.String(), m["board_task_id"], "linked to the round's board task")
	require.Equal(t, "active", m["state"])
	for _, other := range []uuid.UUID{boardTask(f.gil.Principal.TenantID), uuid.New()} {
		_, _, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "create", "title": "x", "board_task_id": other.String()})
		require.True(t, fault.Is(err, fault.NotFound), "a link to another tenant's or a missing board task: %v", err)
	}
	gone := *f.ada
	gone.Principal.TaskID = uuid.New()
	_, m2, err := f.call(t, &gone, "task_manage", map[string]any{"action": "create", "title": "after the round's task went"})
	require.NoError(t, err)
	require.Nil(t, m2["board_task_id"], "a round whose task is gone tracks it unlinked")

	_, m, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "checkpoint", "task_id": id, "note": "reproduced", "steps_done": []int{1}})
	require.NoError(t, err)
	require.Equal(t, true, m["steps"].([]any)[0].(map[string]any)["done"])
	_, _, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "checkpoint", "task_id": id, "steps_done": []int{9}})
	require.True(t, fault.Is(err, fault.Invalid), "%v", err)
	_, m, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "block", "task_id": id, "reason": "waiting for review"})
	require.NoError(t, err)
	require.Equal(t, "blocked", m["state"])
	_, _, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "complete", "task_id": id, "evidence": []map[string]any{{"kind": "test", "detail": "ok"}}})
	require.True(t, fault.Is(err, fault.Conflict), "a blocked task does not complete: %v", err)
	_, m, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "resume", "task_id": id, "note": "reviewed"})
	require.NoError(t, err)
	require.Equal(t, "active", m["state"])
	require.NotNil(t, m["blockers"].([]any)[0].(map[string]any)["resolved_at"])

	_, _, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "complete", "task_id": id, "summary": "done"})
	require.True(t, fault.Is(err, fault.Invalid), "complete without evidence: %v", err)
	require.Contains(t, err.Error(), "needs verification evidence")
	_, _, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "final_review", "task_id": id, "summary": "all green",
		"evidence": []map[string]any{{"kind": "nonsense", "detail": "x"}}})
	require.True(t, fault.Is(err, fault.Invalid), "unknown evidence kind: %v", err)
	_, m, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "final_review", "task_id": id, "summary": "all green",
		"evidence": []map[string]any{{"kind": "test", "detail": "python3 -m unittest: OK"}}})
	require.NoError(t, err)
	require.Equal(t, "review", m["state"])
	_, m, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "complete", "task_id": id})
	require.NoError(t, err, "evidence recorded at final_review counts")
	require.Equal(t, "completed", m["state"])
	_, _, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "checkpoint", "task_id": id, "note": "more"})
	require.True(t, fault.Is(err, fault.Conflict), "a completed task takes no more actions: %v", err)

	for _, sub := range []*tools.Subject{f.bob, f.gil} {
		_, _, err = f.call(t, sub, "task_manage", map[string]any{"action": "get", "task_id": id})
		require.True(t, fault.Is(err, fault.NotFound), "another employee's task: %v", err)
		_, m, err = f.call(t, sub, "task_manage", map[string]any{"action": "list"})
		require.NoError(t, err)
		require.Empty(t, m["tasks"])
	}
	_, m, err = f.call(t, f.ada, "task_manage", map[string]any{"action": "list", "state": "completed"})
	require.NoError(t, err)
	require.Len(t, m["tasks"], 1)
	op := &tools.Subject{Principal: identity.Principal{TenantID: f.ada.Principal.TenantID, Kind: identity.KindOperator}}
	_, _, err = f.call(t, op, "task_manage", map[string]any{"action": "list"})
	require.True(t, fault.Is(err, fault.Forbidden), "an operator key has no tasks of its own: %v", err)
}

func packSkill(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for n, c := range files {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(c)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(c))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return buf.Bytes()
}

func TestCheckSkill(t *testing.T) {
	ok := workspace.CheckSkill(packSkill(t, map[string]string{"SKILL.md": "---\nname: deploy-app\ndescription: Ship the app.\n---\n# Steps\n", "run.sh": "echo hi\n"}))
	require.True(t, ok.Valid, "%v", ok.Issues)
	require.Equal(t, "deploy-app", ok.Name)
	require.Equal(t, 2, ok.Files)
	bad := workspace.CheckSkill(packSkill(t, map[string]string{"README.md": "x"}))
	require.False(t, bad.Valid)
	require.Contains(t, bad.Issues, "no SKILL.md at the folder's root")
	bad = workspace.CheckSkill(packSkill(t, map[string]string{"SKILL.md": "---\nname: Bad Name\n---\n"}))
	require.False(t, bad.Valid)
	require.Len(t, bad.Issues, 2, "%v", bad.Issues)
	_, _, err := workspace.ParseSkillPath("skill://../x")
	require.True(t, fault.Is(err, fault.Invalid))
	name, file, err := workspace.ParseSkillPath("skill://deploy-app")
	require.NoError(t, err)
	require.Equal(t, []string{"deploy-app", "SKILL.md"}, []string{name, file})
	_, _, err = workspace.ParseSkillPath("skill://deploy-app/../../etc/passwd")
	require.True(t, fault.Is(err, fault.Invalid))
}

// TestSkillSearchSources: hub refused with bank; github and hub say they
// need a network Visor does not reach; all searches the bank and says
// what it left out.
func TestSkillSearchSources(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.call(t, f.ada, "skill_search", map[string]any{"query": "deploy", "source": "bank", "hub": "clawhub"})
	require.True(t, fault.Is(err, fault.Invalid))
	require.Contains(t, err.Error(), "hub is not accepted with source=bank")
	for _, src := range []string{"github", "hub"} {
		_, _, err = f.call(t, f.ada, "skill_search", map[string]any{"query": "deploy", "source": src})
		require.True(t, fault.Is(err, fault.Unavailable), "%s: %v", src, err)
		require.Contains(t, err.Error(), "needs the public internet")
	}
	res, m, err := f.call(t, f.ada, "skill_search", map[string]any{"query": "deploy"})
	require.NoError(t, err)
	require.Empty(t, m["results"])
	require.Len(t, m["unsearched_sources"], 2)
	require.Contains(t, res.Text, "were not searched")
	// Environment calls need an installed Skill.
	_, _, err = f.call(t, f.ada, "skill_package", map[string]any{"action": "env_list", "name": "deploy-app"})
	require.True(t, fault.Is(err, fault.NotFound))
	tool, _ := f.reg.Get("skill_package")
	require.Equal(t, tools.PermModifyOwnSkills, tool.Permission)
	require.True(t, tool.PermissionIf(map[string]any{"action": "install"}))
	require.False(t, tool.PermissionIf(map[string]any{"action": "validate"}))
	require.False(t, tool.PermissionIf(map[string]any{"action": "env_list"}))
}

// TestFileToolsWithoutAWorker: a file tool in a deployment without
// workspace workers is a clear unavailable error, and the tools act only
// for AI employees.
func TestFileToolsWithoutAWorker(t *testing.T) {
	f := newFixture(t)
	_, _, err := f.call(t, f.ada, "read_file", map[string]any{"path": "a.txt"})
	require.True(t, fault.Is(err, fault.Unavailable), "%v", err)
	require.True(t, strings.Contains(err.Error(), "not configured"), "%v", err)
	op := &tools.Subject{Principal: identity.Principal{TenantID: f.ada.Principal.TenantID, Kind: identity.KindOperator}}
	_, _, err = f.call(t, op, "list_dir", map[string]any{})
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	for _, tl := range f.reg.All() {
		require.True(t, tl.ProcessAgent, "%s acts for an employee only", tl.Name)
	}
}

// TestViewImageOfAnArtifact: view_image reads an artifact of the caller
// and returns it as an MCP image; another employee's artifact, another
// tenant's and an artifact over the image limit are refused, and an
// unknown id is not found.
func TestViewImageOfAnArtifact(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var buf bytes.Buffer
	img := image.NewNRGBA(image.Rect(0, 0, 300, 100))
	for x := 0; x < 300; x++ {
		for y := 0; y < 100; y++ {
			img.SetNRGBA(x, y, color.NRGBA{R: 200, A: 255})
		}
	}
	require.NoError(t, png.Encode(&buf, img))
	put := func(sub *tools.Subject, size int64, content []byte) uuid.UUID {
		a := workspace.Artifact{TenantID: sub.Principal.TenantID, AgentID: sub.Principal.AgentID, ID: uuid.New(), Name: "pic.png",
			MediaType: "image/png", SHA256: "00", Size: size, CreatedAt: time.Now().UTC()}
		require.NoError(t, f.store.PutArtifact(ctx, a, content))
		return a.ID
	}
	pic := put(f.ada, int64(buf.Len()), buf.Bytes())

	res, m, err := f.call(t, f.ada, "view_image", map[string]any{"artifact_id": pic.String(), "max_dimension": 150})
	require.NoError(t, err)
	require.Equal(t, "artifact", m["source"])
	require.EqualValues(t, 150, m["width"])
	require.EqualValues(t, 50, m["height"])
	require.Len(t, res.Images, 1)
	require.Equal(t, "image/jpeg", res.Images[0].MIMEType)

	for _, sub := range []*tools.Subject{f.bob, f.gil} {
		_, _, err = f.call(t, sub, "view_image", map[string]any{"artifact_id": pic.String()})
		require.True(t, fault.Is(err, fault.NotFound), "%s views ada's artifact: %v", sub.Agent.Name, err)
	}
	_, _, err = f.call(t, f.ada, "view_image", map[string]any{"artifact_id": uuid.NewString()})
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	_, _, err = f.call(t, f.ada, "view_image", map[string]any{"artifact_id": "not-an-id"})
	require.True(t, fault.Is(err, fault.NotFound), "%v", err)
	big := put(f.ada, workspace.MaxImageBytes+1, bytes.Repeat([]byte{0}, workspace.MaxImageBytes+1))
	_, _, err = f.call(t, f.ada, "view_image", map[string]any{"artifact_id": big.String()})
	require.True(t, fault.Is(err, fault.TooLarge), "%v", err)
	_, _, err = f.call(t, f.ada, "view_image", map[string]any{"artifact_id": pic.String(), "path": "pic.png"})
	require.True(t, fault.Is(err, fault.Invalid), "two sources: %v", err)
}

// fetcher serves one picture for any URL, recording what it was asked.
type fetcher struct {
	img   []byte
	asked []string
}

func (f *fetcher) FetchImage(_ context.Context, raw string, max int64) ([]byte, error) {
	f.asked = append(f.asked, raw)
	if int64(len(f.img)) > max {
		return nil, fault.New(fault.TooLarge, "too large")
	}
	return f.img, nil
}

// TestViewImageOfAnAllowedURL: view_image fetches an https URL on the
// employee's allowed hosts through the configured fetcher (the outbound
// guard in a deployment) and returns it resized as an MCP image; a host
// off the list is never fetched.
func TestViewImageOfAnAllowedURL(t *testing.T) {
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, image.NewNRGBA(image.Rect(0, 0, 400, 200))))
	fx := &fetcher{img: buf.Bytes()}
	f := newFixture(t, func(c *workspace.Config) { c.Images = fx })
	f.ada.Agent.Settings.Capabilities.WorkspaceConfig.AllowedHosts = []string{"img.example.com"}
	res, m, err := f.call(t, f.ada, "view_image", map[string]any{"url": "https://img.example.com/a.png", "max_dimension": 100})
	require.NoError(t, err)
	require.Equal(t, "url", m["source"])
	require.EqualValues(t, 100, m["width"])
	require.EqualValues(t, 50, m["height"])
	require.Len(t, res.Images, 1)
	require.Equal(t, []string{"https://img.example.com/a.png"}, fx.asked)
	_, _, err = f.call(t, f.ada, "view_image", map[string]any{"url": "https://other.example.com/a.png"})
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	_, _, err = f.call(t, f.bob, "view_image", map[string]any{"url": "https://img.example.com/a.png"})
	require.True(t, fault.Is(err, fault.Forbidden), "another employee's allow list is its own: %v", err)
	require.Len(t, fx.asked, 1, "refused URLs are never fetched")
}

// TestPublishLimits: file_publish's link lifetime and artifact name are
// bounded before anything is packed.
func TestPublishLimits(t *testing.T) {
	f := newFixture(t)
	for _, args := range []map[string]any{
		{"path": "out", "ttl_seconds": 59},
		{"path": "out", "ttl_seconds": 604801},
		{"path": "out", "name": "a/b.tar.gz"},
		{"path": "out", "name": strings.Repeat("n", 256)},
	} {
		_, _, err := f.call(t, f.ada, "file_publish", args)
		require.True(t, fault.Is(err, fault.Invalid), "%v: %v", args, err)
	}
	_, _, err := f.call(t, f.ada, "file_publish", map[string]any{"path": "out", "ttl_seconds": 604800})
	require.True(t, fault.Is(err, fault.Unavailable), "within bounds it goes to a worker (none here): %v", err)
}
