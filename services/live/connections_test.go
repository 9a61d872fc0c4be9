package live_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/live"
)

// TestHubConnectionsByTenant: the hub lists each tenant's open streams,
// oldest first, and forgets a stream once it is unregistered; a tenant
// never sees another's.
func TestHubConnectionsByTenant(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	// A clock that moves a second on each reading gives every stream its
	// own open time.
	var clock atomic.Int64
	f.hub, _ = f.start(t, live.Config{Visible: f.pol.visible, Now: func() time.Time { return time.Unix(clock.Add(1), 0) }})
	ada, gil := uuid.New(), uuid.New()
	f.open(t, f.ta, ada)
	s := &fakeStream{p: identity.Principal{TenantID: f.ta, Kind: identity.KindExternal, MemberID: uuid.New(), ClientID: "c1", CredentialID: "oauth:1"}}
	unregister := f.hub.Open(context.Background(), s)
	f.open(t, f.tb, gil)

	got := f.hub.Connections("r1")
	require.Len(t, got[f.ta], 2)
	require.Equal(t, live.Connection{Replica: "r1", Kind: identity.KindEmployee, AgentID: ada, CredentialID: "k",
		Opened: got[f.ta][0].Opened}, got[f.ta][0], "oldest first")
	require.Equal(t, "c1", got[f.ta][1].ClientID)
	require.Len(t, got[f.tb], 1)
	require.Equal(t, gil, got[f.tb][0].AgentID)

	unregister()
	local := live.Local{Hub: f.hub, Replica: "r1"}
	cs, err := local.Connected(context.Background(), f.ta)
	require.NoError(t, err)
	require.Len(t, cs, 1)
	require.Equal(t, ada, cs[0].AgentID)
}
