package rounds

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/credentials"
)

// ErrPermanent marks a delivery failure that retrying cannot fix (the
// endpoint's address is refused, or it redirects): the wake-up becomes a
// dead letter at once.
var ErrPermanent = errors.New("permanent delivery failure")

// ErrNoLeases is returned by ClaimDue when the store cannot lease
// wake-ups (it is not a LeaseStore).
var ErrNoLeases = errors.New("the rounds store cannot lease wake-ups")

// LeaseStore lets workers deliver queued wake-ups in sets: a claim leases
// a set of due wake-ups to one worker, and outcomes are recorded a set at
// a time, each only while the wake-up is still queued and leased to the
// worker that attempted it.
type LeaseStore interface {
	// ClaimDue leases to worker, for lease, up to max queued wake-ups whose
	// next attempt is due, skipping those another claim holds, and returns
	// each with what its push needs (read within the wake-up's tenant).
	// Until the lease ends, or its outcome is recorded or released, no
	// other claim takes the wake-up.
	ClaimDue(ctx context.Context, worker string, max int, lease time.Duration) ([]Target, error)
	// AddRoundTokens stores round tokens made with Minter.Prepare.
	AddRoundTokens(ctx context.Context, rts []credentials.RoundToken) error
	// Record records outcomes, each on its wake-up only while it is still
	// queued and leased to the outcome's Worker, and ends the lease.
	Record(ctx context.Context, outs []Outcome) error
}

// Outcome is what one delivery attempt of a leased wake-up came to:
// State Delivered, Ready or Cancelled settles it; an empty State is a
// failed push, counted with its Error, and either Dead (a dead letter) or
// due again at Retry. Release gives the wake-up back, due at once and
// with no attempt counted (its worker stopped before the attempt ended).
type Outcome struct {
	TenantID, ID uuid.UUID
	// Worker is the worker the wake-up is leased to.
	Worker  string
	State   State
	Error   string
	Dead    bool
	Retry   time.Time
	Release bool
}

// Lease is one wake-up leased to a worker for one delivery attempt, with
// what the attempt needs: its target and, when it is to be pushed, its
// round already minted.
type Lease struct {
	Target
	Worker string
	// settle is the state the claim already decided (Cancelled, Ready),
	// empty when it is to be pushed.
	settle State
	round  Round
	// err is why the attempt failed before its push (the round token was
	// not stored).
	err error
}

// ClaimDue leases up to max due wake-ups to worker for lease and stores
// the round tokens of those to push, in one statement each. A wake-up
// whose employee is gone or whose task is finished is to be cancelled,
// one without a push endpoint to be ready for the long-poll.
func (s *Service) ClaimDue(ctx context.Context, worker string, max int, lease time.Duration) ([]Lease, error) {
	if s.leases == nil {
		return nil, ErrNoLeases
	}
	tgs, err := s.leases.ClaimDue(ctx, worker, max, lease)
	if err != nil || len(tgs) == 0 {
		return nil, err
	}
	out := make([]Lease, len(tgs))
	var rts []credentials.RoundToken
	var minted []int
	for i, tg := range tgs {
		out[i] = Lease{Target: tg, Worker: worker}
		w := tg.Wakeup
		switch {
		case !tg.AgentActive || tg.TaskFinished:
			out[i].settle = Cancelled
		case tg.Endpoint == nil:
			out[i].settle = Ready
		default:
			rt, token := s.cfg.Minter.Prepare(w.TenantID, w.AgentID, w.TaskID, nil, s.cfg.RoundTTL)
			out[i].round = Round{Token: token, ExpiresAt: rt.ExpiresAt, MCPURL: s.mcpURL(tg.TenantSlug)}
			rts = append(rts, rt)
			minted = append(minted, i)
		}
	}
	if err := s.leases.AddRoundTokens(ctx, rts); err != nil {
		for _, i := range minted {
			out[i].err = fmt.Errorf("mint the round token: %w", err)
		}
	}
	return out, nil
}

// Attempt makes the delivery attempt of a leased wake-up and says what it
// came to: settled (delivered, ready, cancelled), or a failed push with
// its error, a dead letter when final or when retrying cannot help. A
// failed attempt's Retry is left for the caller's backoff.
func (s *Service) Attempt(ctx context.Context, l Lease, final bool) Outcome {
	out := Outcome{TenantID: l.Wakeup.TenantID, ID: l.Wakeup.ID, Worker: l.Worker, State: l.settle}
	if out.State != "" {
		return out
	}
	err := l.err
	if err == nil {
		err = s.send(ctx, l.Target, l.round)
	}
	if err == nil {
		out.State = Delivered
		return out
	}
	out.Error, out.Dead = err.Error(), final || errors.Is(err, ErrPermanent)
	if out.Dead {
		s.log.WarnContext(ctx, "wake-up is a dead letter", "tenant", out.TenantID, "wakeup", out.ID, "err", err)
	}
	return out
}

// Record records the outcome of an attempt, sharing one statement with
// the outcomes recorded at the same time.
func (s *Service) Record(ctx context.Context, out Outcome) error {
	if s.rec == nil {
		return ErrNoLeases
	}
	_, err := s.rec.do(ctx, out)
	return err
}

// record records a set's outcomes in one batch.
func (s *Service) record(ctx context.Context, calls []*call[Outcome, struct{}]) {
	outs := make([]Outcome, len(calls))
	for i, c := range calls {
		outs[i] = c.in
	}
	if err := s.leases.Record(ctx, outs); err != nil {
		for _, c := range calls {
			c.err = err
		}
	}
}
