package live

import (
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/identity"
)

// Connection is one live notification stream as operators see it: who holds
// it, on which replica, since when. It names the credential but holds no
// secret.
type Connection struct {
	Replica      string                 `json:"replica"`
	Kind         identity.PrincipalKind `json:"kind"`
	AgentID      uuid.UUID              `json:"agent_id,omitzero"`
	MemberID     uuid.UUID              `json:"member_id,omitzero"`
	ClientID     string                 `json:"client_id,omitempty"`
	CredentialID string                 `json:"credential_id,omitempty"`
	Opened       time.Time              `json:"opened"`
}

// Directory tells who is connected to a tenant now, on every replica.
type Directory interface {
	// Connected returns tenantID's live streams, oldest first. Replicas
	// report every few seconds, so a stream opened or closed in the last
	// moments may be missing or still listed.
	Connected(ctx context.Context, tenantID uuid.UUID) ([]Connection, error)
}

// Connections returns this replica's streams by tenant, each tenant's
// oldest first, with replica as their Replica.
func (h *Hub) Connections(replica string) map[uuid.UUID][]Connection {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[uuid.UUID][]Connection, len(h.tenants))
	for id, t := range h.tenants {
		var cs []Connection
		for _, pr := range t.principals {
			for e := range pr.streams {
				p := e.s.Principal()
				cs = append(cs, Connection{Replica: replica, Kind: p.Kind, AgentID: p.AgentID, MemberID: p.MemberID,
					ClientID: p.ClientID, CredentialID: p.CredentialID, Opened: e.opened})
			}
		}
		if len(cs) > 0 {
			SortConnections(cs)
			out[id] = cs
		}
	}
	return out
}

// SortConnections orders cs oldest first, then by replica.
func SortConnections(cs []Connection) {
	slices.SortFunc(cs, func(a, b Connection) int {
		if c := a.Opened.Compare(b.Opened); c != 0 {
			return c
		}
		if a.Replica != b.Replica {
			if a.Replica < b.Replica {
				return -1
			}
			return 1
		}
		if a.CredentialID < b.CredentialID {
			return -1
		}
		if a.CredentialID > b.CredentialID {
			return 1
		}
		return 0
	})
}

// Local is the Directory of a single process without Redis: its own hub's
// streams.
type Local struct {
	Hub     *Hub
	Replica string
}

// Connected returns the hub's streams of tenantID.
func (l Local) Connected(_ context.Context, tenantID uuid.UUID) ([]Connection, error) {
	return l.Hub.Connections(l.Replica)[tenantID], nil
}
