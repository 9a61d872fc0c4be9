package knowledge

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
)

// SettleSource says who settled a belief.
type SettleSource string

// Settlement sources. Only a verified settlement counts toward
// calibration: an employee's own report of how its belief turned out is
// recorded but never trusted.
const (
	AgentUnverified  SettleSource = "agent_unverified"
	PlatformVerified SettleSource = "platform_verified"
)

// Calibration thresholds.
const (
	// CalibratedAt is the fewest verified settlements for which hit
	// rates and scores are reported.
	CalibratedAt = 30
	// MaxBeliefsRead bounds the beliefs belief_stats reads.
	MaxBeliefsRead = 10000
)

// Belief is a probability an employee gave that a claim is true.
type Belief struct {
	TenantID     uuid.UUID    `json:"-"`
	ID           uuid.UUID    `json:"id"`
	AgentID      uuid.UUID    `json:"agent_id"`
	Subject      string       `json:"subject"`
	Claim        string       `json:"claim"`
	Probability  float64      `json:"probability"`
	Source       Source       `json:"source"`
	CreatedAt    time.Time    `json:"created_at"`
	SettledAt    *time.Time   `json:"settled_at,omitempty"`
	Outcome      *bool        `json:"outcome,omitempty"`
	SettleSource SettleSource `json:"settle_source,omitempty"`
	SettledBy    string       `json:"settled_by,omitempty"`
}

// CountsTowardCalibration reports whether b's settlement counts.
func (b Belief) CountsTowardCalibration() bool { return b.SettleSource == PlatformVerified }

// RecordBelief records p's belief that claim is true with probability.
func (s *Service) RecordBelief(ctx context.Context, p identity.Principal, callID uuid.UUID, subject, claim string, probability float64) (Belief, error) {
	if !p.IsEmployee() {
		return Belief{}, fault.New(fault.Forbidden, "beliefs are an AI employee's own")
	}
	if err := checkText("subject", subject, 1, 200); err != nil {
		return Belief{}, err
	}
	if err := checkText("claim", claim, 1, 2000); err != nil {
		return Belief{}, err
	}
	if math.IsNaN(probability) || probability < 0 || probability > 1 {
		return Belief{}, fault.New(fault.Invalid, "probability must be between 0 and 1")
	}
	src, err := s.source(ctx, p, callID)
	if err != nil {
		return Belief{}, err
	}
	b := Belief{TenantID: p.TenantID, ID: uuid.New(), AgentID: p.AgentID, Subject: subject, Claim: claim, Probability: probability, Source: src}
	err = s.cfg.Store.PutBelief(ctx, &b)
	if errors.Is(err, ErrForgotten) {
		return Belief{}, fenced(MsgForgotten)
	}
	return b, err
}

// SettleOwn records how p's own belief turned out, as p's unverified
// report.
func (s *Service) SettleOwn(ctx context.Context, p identity.Principal, id uuid.UUID, outcome bool) (Belief, error) {
	b, err := s.cfg.Store.Belief(ctx, p.TenantID, id)
	if err != nil {
		return Belief{}, err
	}
	if !p.IsEmployee() || b.AgentID != p.AgentID {
		return Belief{}, fault.New(fault.NotFound, "no belief %s of yours", id)
	}
	return s.cfg.Store.Settle(ctx, p.TenantID, id, outcome, AgentUnverified, p.ID())
}

// SettleVerified is an operator's settlement checked against what really
// happened; it counts toward calibration.
func (s *Service) SettleVerified(ctx context.Context, tenantID, id uuid.UUID, outcome bool, by string) (Belief, error) {
	return s.cfg.Store.Settle(ctx, tenantID, id, outcome, PlatformVerified, by)
}

// Stats returns the calibration of an employee's beliefs.
func (s *Service) Stats(ctx context.Context, tenantID, agentID uuid.UUID) (Stats, error) {
	bs, err := s.cfg.Store.Beliefs(ctx, tenantID, agentID, MaxBeliefsRead)
	if err != nil {
		return Stats{}, err
	}
	return Calibrate(bs), nil
}

// StatsFor returns the stats of p's own beliefs, or for a caller that is
// not an employee, of the employee it names.
func (s *Service) StatsFor(ctx context.Context, p identity.Principal, ref string) (Stats, error) {
	agent := p.AgentID
	if !p.IsEmployee() || (ref != "" && ref != p.AgentID.String()) {
		if p.IsEmployee() {
			return Stats{}, fault.New(fault.Forbidden, "an AI employee reads only its own belief stats; leave agent empty")
		}
		if ref == "" {
			return Stats{}, fault.New(fault.Invalid, "agent is required: this caller is not an AI employee, so name the employee")
		}
		a, err := s.agent(ctx, p.TenantID, ref)
		if err != nil {
			return Stats{}, err
		}
		agent = a.ID
	}
	return s.Stats(ctx, p.TenantID, agent)
}
