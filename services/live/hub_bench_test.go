package live_test

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// noVersions is a Versions that knows no tenant.
type noVersions struct{}

func (noVersions) PolicyVersions(context.Context, []uuid.UUID) (map[uuid.UUID]int64, error) {
	return nil, nil
}

// BenchmarkHubIdleStreamMemory measures what the hub itself keeps per idle
// stream (its share of a whole stream's cost): 10,000 streams of 100
// principals, each principal seeing 40 tools.
//
//	go test ./services/live -run '^$' -bench HubIdleStreamMemory -benchtime 1x
func BenchmarkHubIdleStreamMemory(b *testing.B) {
	const principals, perPrincipal = 100, 100
	names := make([]string, 40)
	for i := range names {
		names[i] = "tool_number_" + string(rune('a'+i%26)) + string(rune('a'+i/26))
	}
	visible := func(context.Context, identity.Principal) ([]string, error) { return names, nil }
	hub := live.NewHub(live.Config{Visible: visible, Versions: noVersions{}, ReconcileEvery: time.Hour})
	tenant := uuid.New()
	ps := make([]identity.Principal, principals)
	for i := range ps {
		ps[i] = identity.Principal{TenantID: tenant, Kind: identity.KindEmployee, AgentID: uuid.New(), Scopes: []string{identity.ScopeToolsWrite}}
	}
	streams := make([]*fakeStream, principals*perPrincipal)
	for i := range streams {
		streams[i] = &fakeStream{p: ps[i%principals]}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	closers := make([]func(), len(streams))
	b.ResetTimer()
	for i, s := range streams {
		closers[i] = hub.Open(context.Background(), s)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / float64(len(streams))
	b.ReportMetric(per, "B/stream")
	b.Logf("hub keeps %.0f bytes per idle stream (%d streams, %d principals)", per, len(streams), principals)
	for _, c := range closers {
		c()
	}
	if hub.Stats() != (live.Stats{}) {
		b.Fatal("streams left behind")
	}
}
