package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/visorhq/visor/services/identity"
)

// StreamLimits bound the notification streams one replica holds (listen
// streams and legacy GET streams). A held stream costs an open descriptor
// for as long as it lasts, so without a bound a replica that fills up runs
// out of descriptors and stops answering everything, probes included.
type StreamLimits struct {
	// Max is the most streams this replica holds at once; 0 is no limit.
	Max int
	// PerCredential is the most streams one credential (an API key, an
	// OAuth grant, a round token) holds on this replica; 0 is no limit.
	PerCredential int
	// DrainAt is the count at which the replica reports itself unready
	// (Ready), so a load balancer sends new streams elsewhere before the
	// replica refuses them; 0 is nine tenths of Max.
	DrainAt int
	// RetryAfter is what a refusal tells the client to wait (5 s if zero).
	RetryAfter time.Duration
}

// streamGate counts held streams, in total and by credential.
type streamGate struct {
	lim StreamLimits
	m   *Metrics

	mu     sync.Mutex
	total  int
	byCred map[string]int
}

// Stream refusal reasons, as the refusal's data and the metric's label say.
const (
	refusedReplicaFull = "replica_full"
	refusedCredential  = "credential_limit"
)

func newStreamGate(lim StreamLimits, m *Metrics) *streamGate {
	if lim.Max > 0 && lim.DrainAt <= 0 {
		lim.DrainAt = max(lim.Max*9/10, 1)
	}
	if lim.RetryAfter <= 0 {
		lim.RetryAfter = 5 * time.Second
	}
	m.streamLimit(lim.Max)
	return &streamGate{lim: lim, m: m, byCred: map[string]int{}}
}

// credentialKey names the credential a stream counts against.
func credentialKey(p identity.Principal) string {
	if p.CredentialID != "" {
		return p.TenantID.String() + "/" + p.CredentialID
	}
	return owner(p)
}

// acquire admits one more stream of p, or answers why not. release must be
// called once when the stream ends.
func (g *streamGate) acquire(p identity.Principal) (release func(), refused string) {
	key := credentialKey(p)
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.lim.Max > 0 && g.total >= g.lim.Max:
		g.m.streamRefused(refusedReplicaFull)
		return nil, refusedReplicaFull
	case g.lim.PerCredential > 0 && g.byCred[key] >= g.lim.PerCredential:
		g.m.streamRefused(refusedCredential)
		return nil, refusedCredential
	}
	g.total++
	g.byCred[key]++
	g.m.streamsHeld(g.total)
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.total--
			if g.byCred[key]--; g.byCred[key] <= 0 {
				delete(g.byCred, key)
			}
			g.m.streamsHeld(g.total)
		})
	}, ""
}

// held returns the number of streams held now.
func (g *streamGate) held() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.total
}

// holdsStream reports whether r opens a notification stream: a
// subscriptions/listen request, or a GET on a legacy session.
func holdsStream(r *http.Request, pk *peek) bool {
	return (r.Method == http.MethodPost && pk.Method == "subscriptions/listen") ||
		(r.Method == http.MethodGet && r.Header.Get("Mcp-Session-Id") != "")
}

// admitStream takes a place for the stream r opens, or refuses it: 503 when
// the replica is full (another replica may have room), 429 when the
// credential holds its limit, each with Retry-After and a JSON-RPC error
// (the listen request's id, when it has one) whose data names the reason.
func (h *Handler) admitStream(w http.ResponseWriter, p identity.Principal, pk *peek) (func(), bool) {
	release, refused := h.gate.acquire(p)
	if refused == "" {
		return release, true
	}
	secs := int(max(h.gate.lim.RetryAfter.Round(time.Second)/time.Second, 1))
	status, msg := http.StatusServiceUnavailable,
		fmt.Sprintf("this server holds its limit of %d notification streams; retry in %d s (another replica may take it)", h.gate.lim.Max, secs)
	if refused == refusedCredential {
		status, msg = http.StatusTooManyRequests,
			fmt.Sprintf("this credential holds its limit of %d notification streams on this server; close one or retry in %d s", h.gate.lim.PerCredential, secs)
	}
	id := json.RawMessage("null")
	if len(pk.ID) > 0 {
		id = pk.ID
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{
		"code": codeStreamLimit, "message": msg, "data": map[string]any{"reason": refused, "retry_after_secs": secs}}})
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil, false
}

// codeStreamLimit is the JSON-RPC error code of a refused stream (a
// server-defined code in the range JSON-RPC reserves for servers).
const codeStreamLimit = -32003

// Ready fails once the replica holds DrainAt streams, so /readyz turns a
// load balancer's new streams to other replicas before this one refuses
// them. Streams already held keep working, and tools/call is answered.
func (h *Handler) Ready(context.Context) error {
	if h.gate.lim.DrainAt <= 0 {
		return nil
	}
	if n := h.gate.held(); n >= h.gate.lim.DrainAt {
		return fmt.Errorf("%d notification streams held; draining at %d of a limit of %d", n, h.gate.lim.DrainAt, h.gate.lim.Max)
	}
	return nil
}
