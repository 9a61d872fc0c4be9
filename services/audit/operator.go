package audit

import (
	"net/http"
	"time"

	"github.com/google/uuid"
)

// EventOperatorAction is the event type of every operator action's row.
const EventOperatorAction = "operator_action"

// Operator is one operator action as an edge that takes them (the admin
// API, the dashboard, the CLI) describes it. Row is the one place its
// audit row is built, so the three record the same fields the same way.
type Operator struct {
	TenantID      uuid.UUID
	Source        string // SourceAdminAPI, SourceDashboard or SourceCLI
	PrincipalKind string
	PrincipalID   string
	// Action is the admin API's operation id for the change (the dashboard
	// and the CLI reuse it), or "openPage" for a dashboard page.
	Action string
	Object string // "kind:id", e.g. "member:<id>"
	// Body is the request as a JSON object (a form, the CLI's flags); the
	// row keeps it with every secret masked (MaskedChange).
	Body []byte
	// Status is the HTTP status the action ended with; the CLI gives the
	// status its error's fault code maps to.
	Status  int
	Message string
	Latency time.Duration
}

// Row returns the action's audit row: a new id, the outcome read from the
// status (OutcomeOf), the status as Code, the change masked and its
// digest, and every caller-supplied text made storable (Clean).
func (o Operator) Row() Entry {
	change, digest := MaskedChange(o.Body)
	return Entry{ID: NewID(), TenantID: o.TenantID, PrincipalKind: Clean(o.PrincipalKind), PrincipalID: Clean(o.PrincipalID),
		ArgsDigest: digest, Outcome: OutcomeOf(o.Status), Code: int64(o.Status), Event: EventOperatorAction,
		Message: Clean(o.Message), Latency: o.Latency, At: time.Now(), Source: o.Source, Action: o.Action,
		Object: Clean(o.Object), Change: change}
}

// OutcomeOf names how an operator action ended from its HTTP status: ok
// below 400, refused for 401 and 403 (authorization), rejected for the
// other client mistakes, failed for 5xx.
func OutcomeOf(status int) string {
	switch {
	case status < 400:
		return OutcomeOK
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return OutcomeRefused
	case status < 500:
		return OutcomeRejected
	}
	return OutcomeFailed
}
