package api

import (
	"net/http"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/visorhq/visor/services/identity"

	"github.com/visorhq/visor/auth"
	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/fault"
)

// RoundTokens is the admin API that mints the credential an AI employee
// uses for one round on one task: it resolves to the employee with the
// task bound in, so the round cannot be forged.
type RoundTokens struct {
	rounds *auth.Rounds
	store  credentials.Store
}

// NewRoundTokens returns the round tokens resource.
func NewRoundTokens(rounds *auth.Rounds, store credentials.Store) RoundTokens {
	return RoundTokens{rounds: rounds, store: store}
}

// NewRoundToken is the body of POST /tenants/{tenant}/agents/{agent}/round-tokens.
type NewRoundToken struct {
	TaskID     uuid.UUID `json:"task_id"`
	TTLSeconds int64     `json:"ttl_seconds,omitempty"` // default 3600, at most 86400
	Scopes     []string  `json:"scopes,omitempty"`      // default: every tool scope the minter holds
}

// RoundToken is a minted round token; Token is shown only once.
type RoundToken struct {
	ID        uuid.UUID `json:"id"`
	AgentID   uuid.UUID `json:"agent_id"`
	TaskID    uuid.UUID `json:"task_id"`
	Scopes    []string  `json:"scopes"`
	ExpiresAt time.Time `json:"expires_at"`
	Token     string    `json:"token,omitempty"`
}

// Operations lists the round token routes.
func (r RoundTokens) Operations() []Operation {
	return []Operation{
		{Method: http.MethodPost, Path: "/tenants/:tenant/agents/:agent/round-tokens", ID: "mintRoundToken", Errors: []int{http.StatusConflict}, Tag: "keys", Needs: identity.ManageAgents,
			Summary: "Mint a token for one round of an AI employee on a task (shown once)", Request: NewRoundToken{},
			Response: RoundToken{}, Status: http.StatusCreated, Handler: r.mint},
		{Method: http.MethodDelete, Path: "/tenants/:tenant/round-tokens/:round", ID: "revokeRoundToken", Tag: "keys", Needs: identity.ManageAgents,
			Summary: "Revoke a round token", Handler: r.revoke, Status: http.StatusNoContent},
	}
}

func (r RoundTokens) mint(c echo.Context) error {
	agentID, err := pathID(c, "agent")
	if err != nil {
		return err
	}
	var in NewRoundToken
	if err := decode(c, &in); err != nil {
		return err
	}
	if in.TaskID == uuid.Nil {
		return fault.New(fault.Invalid, "task_id is required")
	}
	// A round token never holds a scope its minter lacks.
	scopes, err := principal(c).Delegate(in.Scopes, identity.DefaultEmployeeScopes)
	if err != nil {
		return err
	}
	if len(scopes) == 0 {
		return fault.New(fault.Forbidden, "you hold no tool scope to give a round token")
	}
	rt, token, err := r.rounds.Mint(c.Request().Context(), tenant(c).ID, agentID, in.TaskID, scopes,
		time.Duration(in.TTLSeconds)*time.Second)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, RoundToken{ID: rt.ID, AgentID: rt.AgentID, TaskID: rt.TaskID, Scopes: rt.Scopes,
		ExpiresAt: rt.ExpiresAt, Token: token})
}

func (r RoundTokens) revoke(c echo.Context) error {
	id, err := pathID(c, "round")
	if err != nil {
		return err
	}
	if err := r.rounds.Revoke(c.Request().Context(), tenant(c).ID, id); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
