package rounds

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

// Target is what delivering one wake-up needs, read in one go.
type Target struct {
	Wakeup     Wakeup
	TenantSlug string
	// Endpoint is the employee's push endpoint, else the tenant's default,
	// else nil (the runtime long-polls); Secret is its signing key.
	Endpoint *Endpoint
	Secret   []byte
	// AgentActive is false when the employee is in the trash.
	AgentActive bool
	// TaskFinished is true when the task is done or cancelled.
	TaskFinished bool
}

// Store persists endpoints and the delivery state of wake-ups. Every
// method takes the tenant; another tenant's row is fault.NotFound.
type Store interface {
	// PutEndpoint creates or replaces the endpoint of e's scope (its
	// agent, or the tenant default) with e.URL and secret, filling e.
	PutEndpoint(ctx context.Context, e *Endpoint, secret []byte) error
	Endpoints(ctx context.Context, tenantID uuid.UUID) ([]Endpoint, error)
	DeleteEndpoint(ctx context.Context, tenantID, id uuid.UUID) error

	Wakeup(ctx context.Context, tenantID, id uuid.UUID) (Wakeup, error)
	Wakeups(ctx context.Context, tenantID uuid.UUID, f Filter) ([]Wakeup, error)
	// Requeue moves a dead letter back to queued, due at once with its
	// attempts starting over; fault.Conflict when it is not dead.
	Requeue(ctx context.Context, tenantID, id uuid.UUID) (Wakeup, error)
	// Claim hands out up to max ready wake-ups of the employee, oldest
	// first, marking them handed_out and storing the round token token
	// returns for each in the same transaction. Concurrent claims never
	// take the same wake-up.
	Claim(ctx context.Context, tenantID, agentID uuid.UUID, max int, token func(Wakeup) credentials.RoundToken) ([]Wakeup, error)
	// EndRounds revokes the live round tokens of the task (for agentID, or
	// every employee when uuid.Nil) and cancels its pending wake-ups.
	EndRounds(ctx context.Context, tenantID, taskID, agentID uuid.UUID) (revoked int64, err error)
}

// Minter mints round tokens (auth.Rounds): Mint stores the token, Prepare
// leaves storing it to the caller's transaction.
type Minter interface {
	Mint(ctx context.Context, tenantID, agentID, taskID uuid.UUID, scopes []string, ttl time.Duration) (credentials.RoundToken, string, error)
	Prepare(tenantID, agentID, taskID uuid.UUID, scopes []string, ttl time.Duration) (credentials.RoundToken, string)
}

// Doer sends HTTP requests to runtimes; it must guard against SSRF
// (egress.Client) and cap what it reads.
type Doer interface {
	Do(req *http.Request) (*http.Response, error)
}

// Config configures a Service.
type Config struct {
	Store  Store
	Minter Minter
	HTTP   Doer
	// MCPURL returns the MCP endpoint URL of a tenant slug.
	MCPURL func(slug string) string
	// RoundTTL is the longest a round (and its token) lives; default 1 h.
	RoundTTL time.Duration
	// DevHosts lists hosts whose endpoints may use plain http and private
	// addresses: development only.
	DevHosts []string
	// Changes hears revocations of round tokens, so caches drop them.
	Changes changes.Publisher
	// Notes, when set, adds what the employee itself left for its next
	// round on the task (its hand-off) to each payload, as data.
	Notes  Notes
	Logger *slog.Logger
	// EndpointLimit bounds the pushes one process sends to one endpoint
	// at once (DefaultEndpointLimit if zero).
	EndpointLimit int
}

// Service delivers rounds and manages runtime endpoints and dead letters.
type Service struct {
	cfg   Config
	log   *slog.Logger
	now   func() time.Time
	bell  *Bell
	gates *gates
	// leases and rec deliver claimed wake-ups when the store is a
	// LeaseStore (nil otherwise); rec shares the statement that records
	// the outcomes of concurrent deliveries.
	leases LeaseStore
	rec    *group[Outcome, struct{}]
}

// NewService returns the rounds service.
func NewService(cfg Config) *Service {
	if cfg.RoundTTL == 0 {
		cfg.RoundTTL = time.Hour
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Changes == nil {
		cfg.Changes = changes.Discard{}
	}
	s := &Service{cfg: cfg, log: cfg.Logger, now: time.Now, gates: newGates(cfg.EndpointLimit)}
	if l, ok := cfg.Store.(LeaseStore); ok {
		s.leases = l
		s.rec = newGroup(s.record)
	}
	return s
}

// checkURL refuses an endpoint URL the outbound guard refuses (not https,
// or http for a dev host; credentials or a fragment; a destination off the
// public internet). A refused destination is Forbidden, a malformed URL
// Invalid. Host names are checked again on every dial, after DNS.
func (s *Service) checkURL(raw string) (string, error) {
	u, err := egress.CheckURL(raw, s.cfg.DevHosts)
	switch {
	case errors.Is(err, egress.ErrNotPublic):
		return "", fault.Newf(fault.Forbidden, err, "url names a non-public address; runtimes must be reachable on the public internet")
	case err != nil:
		return "", fault.New(fault.CodeOf(err), "url %s", fault.Message(err))
	}
	return u, nil
}

// SetEndpoint creates or replaces the push endpoint of an employee, or the
// tenant's default when agentID is uuid.Nil, and returns it with its new
// signing secret ("whsec_…"), which is shown this once. Replacing an
// endpoint rotates its secret. Errors: Invalid or Forbidden for the URL,
// NotFound for the employee.
func (s *Service) SetEndpoint(ctx context.Context, tenantID, agentID uuid.UUID, rawURL string) (Endpoint, string, error) {
	u, err := s.checkURL(rawURL)
	if err != nil {
		return Endpoint{}, "", err
	}
	key, shown := NewSecret()
	e := Endpoint{ID: uuid.New(), TenantID: tenantID, AgentID: agentID, URL: u}
	if err := s.cfg.Store.PutEndpoint(ctx, &e, key); err != nil {
		return Endpoint{}, "", err
	}
	return e, shown, nil
}

// Endpoints lists the tenant's push endpoints.
func (s *Service) Endpoints(ctx context.Context, tenantID uuid.UUID) ([]Endpoint, error) {
	return s.cfg.Store.Endpoints(ctx, tenantID)
}

// DeleteEndpoint deletes a push endpoint; its employees' wake-ups then
// wait for a long-poll (or go to the tenant's default endpoint).
func (s *Service) DeleteEndpoint(ctx context.Context, tenantID, id uuid.UUID) error {
	return s.cfg.Store.DeleteEndpoint(ctx, tenantID, id)
}

// MaxList bounds a page of wake-ups.
const MaxList = 200

// Wakeups lists the tenant's wake-ups newest first; State: Dead lists the
// dead letters.
func (s *Service) Wakeups(ctx context.Context, tenantID uuid.UUID, f Filter) ([]Wakeup, error) {
	if f.State != "" && !f.State.Valid() {
		return nil, fault.New(fault.Invalid, "state must be one of queued, ready, handed_out, delivered, dead, cancelled")
	}
	if f.Limit <= 0 || f.Limit > MaxList {
		f.Limit = MaxList
	}
	return s.cfg.Store.Wakeups(ctx, tenantID, f)
}

// Wakeup returns one wake-up.
func (s *Service) Wakeup(ctx context.Context, tenantID, id uuid.UUID) (Wakeup, error) {
	return s.cfg.Store.Wakeup(ctx, tenantID, id)
}

// Retry sends a dead letter again: it is queued, due at once, and its
// attempts start over. Conflict when it is not a dead letter.
func (s *Service) Retry(ctx context.Context, tenantID, id uuid.UUID) (Wakeup, error) {
	return s.cfg.Store.Requeue(ctx, tenantID, id)
}

// EndRounds ends the rounds of a task: for one employee (agentID), or for
// every employee (uuid.Nil). Their round tokens stop working at once and
// wake-ups not yet delivered are cancelled. The board calls it when a task
// is finished, blocked or taken from its assignee.
func (s *Service) EndRounds(ctx context.Context, tenantID, taskID, agentID uuid.UUID) error {
	n, err := s.cfg.Store.EndRounds(ctx, tenantID, taskID, agentID)
	if err != nil {
		return err
	}
	if n > 0 {
		// A lost event is repaired by the caches' TTL; the revocation is durable.
		_ = s.cfg.Changes.Publish(ctx, changes.Event{TenantID: tenantID, Kind: changes.KeyChanged})
	}
	return nil
}

// send posts the signed payload of tg's wake-up with its round.
func (s *Service) send(ctx context.Context, tg Target, round Round) error {
	w := tg.Wakeup
	p := NewPayload(w, tg.TenantSlug, round)
	if err := s.addNotes(ctx, &p, w.TenantID); err != nil {
		return fmt.Errorf("read the employee's hand-off: %w", err)
	}
	body, err := json.Marshal(p)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tg.Endpoint.URL, strings.NewReader(string(body)))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrPermanent, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Visor-Rounds/1")
	release, err := s.gates.acquire(ctx, tg.Endpoint.ID)
	if err != nil {
		return fmt.Errorf("waited for a free push to the endpoint: %w", err)
	}
	defer release()
	SetHeaders(req.Header, tg.Secret, w.ID.String(), s.now(), body)
	res, err := s.cfg.HTTP.Do(req)
	if err != nil {
		if fault.Is(err, fault.Forbidden) { // a refused address or a redirect
			return fmt.Errorf("%w: %s", ErrPermanent, describe(err))
		}
		return errors.New(describe(err))
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, 16<<10))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("the runtime answered HTTP %d", res.StatusCode)
	}
	return nil
}

// describe reduces a transport error to what an operator needs, without
// the request URL's query (which may hold a runtime's own token).
func describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "the runtime did not answer in time"
	}
	return err.Error()
}

// SetMCPURL replaces how the MCP URL of a tenant is made, once the
// server knows its public address; call it before deliveries start.
func (s *Service) SetMCPURL(fn func(slug string) string) { s.cfg.MCPURL = fn }

func (s *Service) mcpURL(slug string) string {
	if s.cfg.MCPURL == nil {
		return ""
	}
	return s.cfg.MCPURL(slug)
}

// MaxTake bounds how many wake-ups one long-poll hands out.
const MaxTake = 50

// Take hands out up to max ready wake-ups of the employee, each exactly
// once, with a fresh round token each. It does not wait.
func (s *Service) Take(ctx context.Context, tenantID uuid.UUID, slug string, agentID uuid.UUID, max int) ([]Payload, error) {
	if max <= 0 || max > MaxTake {
		max = MaxTake
	}
	var out []Payload
	_, err := s.cfg.Store.Claim(ctx, tenantID, agentID, max, func(w Wakeup) credentials.RoundToken {
		rt, token := s.cfg.Minter.Prepare(tenantID, w.AgentID, w.TaskID, nil, s.cfg.RoundTTL)
		out = append(out, NewPayload(w, slug, Round{Token: token, ExpiresAt: rt.ExpiresAt, MCPURL: s.mcpURL(slug)}))
		return rt
	})
	if err != nil {
		return nil, err
	}
	for i := range out {
		// The wake-ups are handed out already: a hand-off that cannot be
		// read is logged, and the round goes ahead without it.
		if err := s.addNotes(ctx, &out[i], tenantID); err != nil {
			s.log.WarnContext(ctx, "a round went out without its hand-off", "tenant", tenantID, "wakeup", out[i].ID, "err", err)
		}
	}
	if out == nil {
		out = []Payload{}
	}
	return out, nil
}
