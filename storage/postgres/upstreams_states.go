package postgres

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/upstreams"
)

// maxPendingConnects bounds one member's pending Connects (states not yet
// taken nor expired), so a member cannot fill the table.
const maxPendingConnects = 20

// SaveState stores a pending Connect, dropping expired ones first.
// Conflict when the member holds maxPendingConnects pending already.
func (st *UpstreamStore) SaveState(ctx context.Context, s upstreams.State) error {
	if _, err := st.db.Pool.Exec(ctx, `DELETE FROM mcp_oauth_states WHERE expires_at < now()`); err != nil {
		return err
	}
	tag, err := st.db.Pool.Exec(ctx, `INSERT INTO mcp_oauth_states
		(tenant_id, state_hash, server_id, member_id, token_member_id, session_hash, sealed_verifier, redirect_uri, expires_at)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9
		WHERE EXISTS (SELECT 1 FROM mcp_servers WHERE tenant_id = $1 AND id = $3)
		  AND (SELECT count(*) FROM mcp_oauth_states WHERE tenant_id = $1 AND member_id = $4) < $10`,
		s.TenantID, s.StateHash, s.ServerID, s.MemberID, s.TokenMemberID, s.SessionHash, s.SealedVerifier, s.RedirectURI, s.ExpiresAt, maxPendingConnects)
	if err != nil {
		return mapErr(err, "upstream connect")
	}
	if tag.RowsAffected() == 0 {
		return fault.New(fault.Conflict, "the server is gone, or %d Connects are pending already; finish or wait for one", maxPendingConnects)
	}
	return nil
}

// TakeState removes and returns the pending Connect with stateHash, when
// it was started by member in the session sessionHash and has not
// expired. NotFound otherwise: a state is taken once.
func (st *UpstreamStore) TakeState(ctx context.Context, tenantID uuid.UUID, stateHash string, memberID uuid.UUID, sessionHash string) (upstreams.State, error) {
	s := upstreams.State{TenantID: tenantID, StateHash: stateHash}
	err := st.db.Pool.QueryRow(ctx, `DELETE FROM mcp_oauth_states
		WHERE tenant_id = $1 AND state_hash = $2 AND member_id = $3 AND session_hash = $4 AND expires_at > now()
		RETURNING server_id, member_id, token_member_id, session_hash, sealed_verifier, redirect_uri, expires_at`,
		tenantID, stateHash, memberID, sessionHash).Scan(&s.ServerID, &s.MemberID, &s.TokenMemberID, &s.SessionHash, &s.SealedVerifier, &s.RedirectURI, &s.ExpiresAt)
	return s, mapErr(err, "upstream connect")
}
