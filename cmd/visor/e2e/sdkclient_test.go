package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// bearer adds a bearer token to every request of the SDK client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// TestOfficialClientSeesTheChange connects the official MCP Go SDK client,
// in each era, to replica B and checks that its ToolListChangedHandler runs
// when ada's settings change through replica A, and that ListTools then
// returns the new set.
func TestOfficialClientSeesTheChange(t *testing.T) {
	t.Parallel()
	srv := privateRedis(t)
	w, a, b := twoReplicas(t, srv.URL(), "VISOR_LIVE_RECONCILE_EVERY=1m")
	for i, version := range []string{legacyVersion, modernVersion} {
		changed := make(chan struct{}, 4)
		c := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, &sdk.ClientOptions{
			ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed <- struct{}{} },
		})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{
			Endpoint:   b.base + "/t/acme/mcp",
			HTTPClient: &http.Client{Transport: bearer{token: w.adaKey, next: http.DefaultTransport}},
		}, &sdk.ClientSessionOptions{ProtocolVersion: version})
		require.NoError(t, err, version)
		names := func() []string {
			res, err := cs.ListTools(ctx, nil)
			require.NoError(t, err, version)
			var out []string
			for _, tl := range res.Tools {
				out = append(out, tl.Name)
			}
			return out
		}
		hidden := i%2 == 0 // the first era hides agent_status, the second shows it again
		require.Equal(t, !hidden, !contains(names(), "agent_status"), version)
		// The client's listener opens asynchronously after Connect; retry
		// the change until the client hears of one.
		deadline := time.Now().Add(10 * time.Second)
		for heard := false; !heard; {
			if hidden {
				w.setDenied(t, a, w.ada, "agent_status")
			} else {
				w.setDenied(t, a, w.ada)
			}
			select {
			case <-changed:
				heard = true
			case <-time.After(time.Second):
				require.True(t, time.Now().Before(deadline), "%s: the SDK client never heard tools/list_changed", version)
				// Put the set back so the next attempt is a real change again.
				if hidden {
					w.setDenied(t, a, w.ada)
				} else {
					w.setDenied(t, a, w.ada, "agent_status")
				}
				<-time.After(200 * time.Millisecond)
				for len(changed) > 0 {
					<-changed
				}
			}
		}
		require.Equal(t, hidden, !contains(names(), "agent_status"), "%s: ListTools after the notification", version)
		require.NoError(t, cs.Close())
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
