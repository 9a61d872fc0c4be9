package egress_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/web/egress"
)

// TestCheckURLRefusesWhatTheClientMustNotReach: only absolute https URLs
// of public hosts pass; a development host may use http and a private
// address.
func TestCheckURLRefusesWhatTheClientMustNotReach(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/visor?x=1": true,
		"https://203.0.113.9/hook":            true,
		"http://hooks.example.com/visor":      false,
		"hooks.example.com":                   false,
		"https://u:p@hooks.example.com/":      false,
		"https://hooks.example.com/#frag":     false,
		"https://10.1.2.3/":                   false,
		"https://192.168.1.1/":                false,
		"https://127.0.0.1/":                  false,
		"https://[::1]/":                      false,
		"https://[fd00::1]/":                  false,
		"https://169.254.169.254/":            false,
		"https://100.64.0.1/":                 false,
		"https://localhost/":                  false,
		"https://api.localhost/":              false,
		"mailto:ops@example.com":              false,
	} {
		_, err := egress.CheckURL(raw, nil)
		if ok {
			require.NoError(t, err, raw)
			continue
		}
		require.Error(t, err, raw)
		require.True(t, fault.Is(err, fault.Invalid), "%s: %v", raw, err)
	}
	u, err := egress.CheckURL("http://127.0.0.1:8080/hook", []string{"127.0.0.1"})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8080/hook", u)
}

// FuzzCheckURL: no input panics, and what passes is https or a dev host's.
func FuzzCheckURL(f *testing.F) {
	f.Add("https://hooks.example.com/x")
	f.Add("http://[::1]:80/")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := egress.CheckURL(raw, nil)
		if err == nil && len(u) < 8 {
			t.Fatalf("passed %q as %q", raw, u)
		}
	})
}
