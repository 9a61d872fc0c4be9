package rounds_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/rounds"
)

// savedStore records the endpoints it is asked to store.
type savedStore struct {
	rounds.Store
	urls []string
}

func (s *savedStore) PutEndpoint(_ context.Context, e *rounds.Endpoint, _ []byte) error {
	s.urls = append(s.urls, e.URL)
	return nil
}

// TestSetEndpointRefusesEveryNonPublicDestination: a runtime endpoint is
// held to the same outbound guard as every other URL Visor calls, so the
// ranges a narrower copy of the rule let through (carrier-grade NAT,
// benchmarking, NAT64, documentation, IPv4-mapped private addresses,
// names under localhost) are refused before anything is stored; a
// development host is still accepted.
func TestSetEndpointRefusesEveryNonPublicDestination(t *testing.T) {
	t.Parallel()
	store := &savedStore{}
	svc := rounds.NewService(rounds.Config{Store: store, DevHosts: []string{"Runtime.Test"}})
	for _, raw := range []string{
		"https://100.64.0.1/hook",
		"https://198.18.0.1/hook",
		"https://192.0.2.10/hook",
		"https://240.0.0.1/hook",
		"https://[64:ff9b::a00:1]/hook",
		"https://[2002:a00:1::]/hook",
		"https://[::ffff:10.0.0.1]/hook",
		"https://[::ffff:127.0.0.1]/hook",
		"https://[::a00:1]/hook",
		"https://api.localhost/hook",
		"https://2130706433/hook",
		"https://10.1.2.3/hook",
		"https://localhost/hook",
	} {
		_, _, err := svc.SetEndpoint(t.Context(), uuid.New(), uuid.Nil, raw)
		require.Equal(t, fault.Forbidden, fault.CodeOf(err), "%s: %v", raw, err)
	}
	require.Empty(t, store.urls, "a refused endpoint was stored")

	_, _, err := svc.SetEndpoint(t.Context(), uuid.New(), uuid.Nil, "http://runtime.test:8080/hook")
	require.NoError(t, err)
	_, _, err = svc.SetEndpoint(t.Context(), uuid.New(), uuid.Nil, "http://runtime.example.com/hook")
	require.Equal(t, fault.Invalid, fault.CodeOf(err), "plain http off the development list: %v", err)
	require.Equal(t, []string{"http://runtime.test:8080/hook"}, store.urls)
}
