package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/services/rounds"
)

// callToolResult calls a tool on r as token and returns its answer,
// error or not.
func callToolResult(t *testing.T, r *replica, token, name string, args map[string]any) toolResult {
	t.Helper()
	res, _ := mcpPost(t, r, token, modernVersion, "", map[string]any{"id": 1, "method": "tools/call",
		"params": map[string]any{"_meta": modernMeta(), "name": name, "arguments": args}})
	require.Nil(t, res.Error, "%s: %+v", name, res.Error)
	var out toolResult
	require.NoError(t, json.Unmarshal(res.Result, &out))
	return out
}

// TestKnowledgeOverMCPWithRoundTokens is the knowledge path end to end:
// ada's runtime takes a wake-up by long-poll, and with that round's token
// stores a memory (its source is the round), finds it again in Japanese
// (fenced, with injection flags) and leaves a hand-off; her next round on
// the task carries the hand-off as fenced data. An operator forgets the
// second round over the admin API (ada's own key is refused), and that
// round's next write is refused with the documented text and audited as
// memory_write_fenced.
func TestKnowledgeOverMCPWithRoundTokens(t *testing.T) {
	w := newWorld(t)
	redis := privateRedis(t)
	r := startReplica(t, "a", w.dbURL, redis.URL())
	startWorker(t, "w1", w.dbURL, redis.URL(), "VISOR_BASE_URL="+r.base)
	ctx := context.Background()
	poll := func() rounds.Payload {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, r.base+"/t/acme/runtime/wakeups?wait=30&max=1", nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+w.adaKey)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var out struct {
			Wakeups []rounds.Payload `json:"wakeups"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		require.Len(t, out.Wakeups, 1)
		return out.Wakeups[0]
	}

	task := taskOf(t, callTool(t, r, w.operator, "tasks_create", map[string]any{"title": "Prepare the Osaka offsite", "assignee": "ada"}))
	first := poll()
	require.Equal(t, task.ID, first.TaskID)
	tok := first.Round.Token

	res := callTool(t, r, tok, "memory_store", map[string]any{"content": "大阪オフサイトの会場は梅田の会議室に決まった。The Osaka offsite venue is a meeting room in Umeda.",
		"key_facts": []string{"venue: Umeda"}, "layer": "episodic"})
	var stored struct {
		ID     string           `json:"id"`
		Source knowledge.Source `json:"source"`
	}
	require.NoError(t, json.Unmarshal(res.Structured, &stored))
	require.Equal(t, knowledge.KindRound, stored.Source.Kind, "the source is the round the token stands for")
	require.Equal(t, task.ID, stored.Source.TaskID)
	require.Equal(t, w.ada.ID, stored.Source.AgentID)

	found := callTool(t, r, tok, "memory_search", map[string]any{"query": "オフサイトの会場"})
	text := found.Content[0].Text
	require.Contains(t, text, "<memory id=\""+stored.ID+"\"")
	require.Contains(t, text, `injection_flags="none"`)
	require.Contains(t, text, `source="`+stored.Source.Key+`"`)

	callTool(t, r, tok, "working_state_handoff", map[string]any{"status": "continue",
		"next_steps": []string{"会場の予約を確定する", "send the agenda to bob"}})
	refused := callToolResult(t, r, tok, "working_state_handoff", map[string]any{"status": "complete", "evidence": []string{"booked"},
		"next_steps": []string{"x"}})
	require.True(t, refused.IsError)
	require.Contains(t, refused.Content[0].Text, "status complete forbids blocker and next_steps")

	// A belief, settled by ada herself (it does not count), then verified
	// by an operator over the admin API (it does).
	var belief struct {
		ID string `json:"id"`
	}
	require.NoError(t, json.Unmarshal(callTool(t, r, tok, "belief_record", map[string]any{"subject": "venue",
		"claim": "Umeda is confirmed by Friday.", "probability": 0.8}).Structured, &belief))
	var settled struct {
		Counts bool   `json:"counts_toward_calibration"`
		Note   string `json:"note"`
		Belief struct {
			SettleSource string `json:"settle_source"`
		} `json:"belief"`
	}
	require.NoError(t, json.Unmarshal(callTool(t, r, tok, "belief_settle", map[string]any{"belief_id": belief.ID, "outcome": true}).Structured, &settled))
	require.False(t, settled.Counts)
	require.Equal(t, "agent_unverified", settled.Belief.SettleSource)
	require.Equal(t, knowledge.SettleNote, settled.Note)
	var verified struct {
		Counts bool `json:"counts_toward_calibration"`
	}
	w.api(t, r, http.MethodPost, "/tenants/acme/beliefs/"+belief.ID+"/settle", map[string]any{"outcome": true}, &verified)
	require.True(t, verified.Counts)
	var stats struct {
		Stats knowledge.Stats `json:"stats"`
	}
	w.api(t, r, http.MethodGet, "/tenants/acme/agents/ada/beliefs/stats", nil, &stats)
	require.Equal(t, knowledge.Insufficient, stats.Stats.Status)
	require.Equal(t, 1, stats.Stats.Verified.N)
	require.Nil(t, stats.Stats.Verified.HitRate)

	// The next round of ada on this task: reassigned away and back.
	callTool(t, r, w.operator, "tasks_update", map[string]any{"task_id": task.ID.String(), "assignee": "bob"})
	callTool(t, r, w.operator, "tasks_update", map[string]any{"task_id": task.ID.String(), "assignee": "ada"})
	second := poll()
	require.Equal(t, task.ID, second.TaskID)
	var carried *rounds.Data
	for i, d := range second.Data {
		if d.Label == knowledge.HandoffLabel {
			carried = &second.Data[i]
		}
	}
	require.NotNil(t, carried, "the hand-off reaches the next round: %+v", second.Data)
	require.Contains(t, carried.Text, "会場の予約を確定する")
	require.Contains(t, second.Fenced, "会場の予約を確定する", "as fenced data")
	require.Contains(t, second.Fenced, "<<<DATA ")
	tok2 := second.Round.Token

	res = callTool(t, r, tok2, "memory_store", map[string]any{"content": "The agenda went to bob."})
	var again struct {
		Source knowledge.Source `json:"source"`
	}
	require.NoError(t, json.Unmarshal(res.Structured, &again))
	require.NotEqual(t, stored.Source.Key, again.Source.Key, "another round, another source")

	// ada's own key cannot forget; the operator can.
	req, err := http.NewRequest(http.MethodPost, r.base+"/api/v1/tenants/acme/knowledge/sources/"+again.Source.Key+"/forget", bytes.NewReader(nil))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+w.adaKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	var fg knowledge.Forgotten
	w.api(t, r, http.MethodPost, "/tenants/acme/knowledge/sources/"+again.Source.Key+"/forget", nil, &fg)
	require.EqualValues(t, 1, fg.Memories)

	refused = callToolResult(t, r, tok2, "memory_store", map[string]any{"content": "The agenda went to bob."})
	require.True(t, refused.IsError)
	require.Equal(t, knowledge.MsgForgotten, refused.Content[0].Text)
	refused = callToolResult(t, r, tok2, "decision_resolve", map[string]any{"question": "Which venue?", "choice": "Umeda"})
	require.Equal(t, knowledge.MsgDecisionForgotten, refused.Content[0].Text)
	var fenced, forgot int
	require.Eventually(t, func() bool {
		_ = w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND event_type = $2`,
			w.acme.ID, knowledge.EventFenced).Scan(&fenced)
		_ = w.db.Pool.QueryRow(ctx, `SELECT count(*) FROM audit_events WHERE tenant_id = $1 AND action = 'forgetKnowledgeSource' AND outcome = 'ok'`,
			w.acme.ID).Scan(&forgot)
		return fenced == 2 && forgot == 1
	}, 10*time.Second, 50*time.Millisecond, "refusals audited as %s (%d) and the forget as an operator action (%d)", knowledge.EventFenced, fenced, forgot)

	// The first round's memory is still there, and the dashboard's API finds it.
	var list struct {
		Memories []knowledge.Hit `json:"memories"`
	}
	w.api(t, r, http.MethodGet, "/tenants/acme/agents/ada/memories?q=Umeda", nil, &list)
	require.Len(t, list.Memories, 1)
	require.True(t, strings.HasPrefix(list.Memories[0].Source.Key, "round:"))
}
