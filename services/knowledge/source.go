package knowledge

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/tools"
)

// SourceKind says what a source is.
type SourceKind string

// Source kinds.
const (
	// KindRound is one round: a round token, minted for one wake-up of one
	// employee on one task.
	KindRound SourceKind = "round"
	// KindRun is a run of a continuous responsibility: every round on the
	// run's task or a task under it.
	KindRun SourceKind = "run"
	// KindCall is one call of a credential outside any round (an
	// employee's key, an OAuth client, an operator key).
	KindCall SourceKind = "call"
)

// Source is where a write came from. Key is its stable name inside the
// tenant ("round:<id>", "run:<task id>", "call:<id>"), which an operator
// forgets it by.
type Source struct {
	Key       string     `json:"key"`
	Kind      SourceKind `json:"kind"`
	AgentID   uuid.UUID  `json:"agent_id,omitzero"`
	TaskID    uuid.UUID  `json:"task_id,omitzero"`
	Principal string     `json:"principal"`
	// CreatedAt is when the source first wrote; ForgottenAt is set once
	// an operator forgot it.
	CreatedAt   time.Time  `json:"created_at,omitzero"`
	ForgottenAt *time.Time `json:"forgotten_at,omitempty"`
}

// The refusals of a write whose source cannot be used. The texts are
// part of the tools' contract: runtimes and their operators match on them.
const (
	MsgForgotten = "Not stored: the conversation this write comes from was forgotten by the operator " +
		"(forget by source), so nothing derived from it may be stored again"
	MsgDecisionForgotten = "Not resolved: the conversation this choice comes from was forgotten by the operator"
	MsgMalformed         = "Not stored: this employee process carries a malformed conversation or run identity " +
		"from the gateway, so the write could not be tied to its source. Restart the gateway; if it persists, report it."
)

// EventFenced is the audit event of a write refused because its source
// (or a memory it derives from) was forgotten.
const EventFenced = "memory_write_fenced"

// fenced is the refusal of a write from a forgotten source.
func fenced(msg string) error {
	return &tools.EventError{Event: EventFenced, Err: fault.New(fault.Forbidden, "%s", msg)}
}

// ErrForgotten is what a Store returns when the source of a write, or a
// memory it names as a parent, was forgotten; the service turns it into
// the refusal of the tool at hand.
var ErrForgotten = fault.New(fault.Forbidden, "%s", MsgForgotten)

// Runs finds the responsibility run a round belongs to
// (responsibilities.Service.RunOf): the run's task, and whether there is one.
type Runs interface {
	RunOf(ctx context.Context, tenantID, agentID, roundTask uuid.UUID) (uuid.UUID, bool, error)
}

// Derive returns the source of a write by p in the call callID (the
// call's audit id; a fresh id when uuid.Nil). A round token's credential
// names its round; a round of a responsibility run is the run. A
// credential that claims a round but does not carry one whole is refused
// with MsgMalformed: such a write is never stored as an anonymous call.
func Derive(ctx context.Context, runs Runs, p identity.Principal, callID uuid.UUID) (Source, error) {
	src := Source{Principal: p.ID()}
	if p.IsEmployee() {
		src.AgentID = p.AgentID
	}
	rest, isRound := strings.CutPrefix(p.CredentialID, "round:")
	switch {
	case isRound:
		id, err := uuid.Parse(rest)
		if err != nil || id == uuid.Nil || p.TaskID == uuid.Nil || !p.IsEmployee() {
			return Source{}, fault.New(fault.Invalid, "%s", MsgMalformed)
		}
		src.TaskID = p.TaskID
		if runs != nil {
			runTask, ok, err := runs.RunOf(ctx, p.TenantID, p.AgentID, p.TaskID)
			if err != nil && !fault.Is(err, fault.NotFound) {
				return Source{}, err
			}
			if ok && runTask != uuid.Nil {
				src.Kind, src.Key, src.TaskID = KindRun, "run:"+runTask.String(), runTask
				return src, nil
			}
		}
		src.Kind, src.Key = KindRound, "round:"+id.String()
		return src, nil
	case p.TaskID != uuid.Nil:
		// A task without a round credential: something upstream mixed
		// up identities; refuse rather than guess.
		return Source{}, fault.New(fault.Invalid, "%s", MsgMalformed)
	}
	if callID == uuid.Nil {
		callID = uuid.New()
	}
	src.Kind, src.Key = KindCall, "call:"+callID.String()
	return src, nil
}

// ValidKey reports whether key has the shape of a source key.
func ValidKey(key string) bool {
	kind, id, ok := strings.Cut(key, ":")
	if !ok {
		return false
	}
	switch SourceKind(kind) {
	case KindRound, KindRun, KindCall:
	default:
		return false
	}
	u, err := uuid.Parse(id)
	return err == nil && u != uuid.Nil && u.String() == id
}
