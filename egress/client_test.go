package egress_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
)

// TestClientRefusesRedirectsAndPrivateAddressesAsForbidden: both refusals
// are fault.Forbidden, which is how the services outside web/ tell them
// from a failure worth retrying; a redirect is also ErrRedirect, and its
// target is never asked.
func TestClientRefusesRedirectsAndPrivateAddressesAsForbidden(t *testing.T) {
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(srv.Close)

	allowed := egress.New(egress.Config{AllowPrivateHosts: []string{"127.0.0.1"}})
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/hook", nil)
	require.NoError(t, err)
	res, err := allowed.Do(req)
	if res != nil {
		res.Body.Close()
	}
	require.Error(t, err)
	require.True(t, errors.Is(err, egress.ErrRedirect), "%v", err)
	require.True(t, fault.Is(err, fault.Forbidden), "%v", err)
	require.False(t, followed.Load(), "the redirect's target was asked")

	guarded := egress.New(egress.Config{})
	req, err = http.NewRequest(http.MethodPost, srv.URL+"/hook", nil)
	require.NoError(t, err)
	res, err = guarded.Do(req)
	if res != nil {
		res.Body.Close()
	}
	require.Error(t, err)
	require.False(t, errors.Is(err, egress.ErrRedirect), "%v", err)
	require.True(t, fault.Is(err, fault.Forbidden), "a loopback address: %v", err)
}
