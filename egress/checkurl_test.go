package egress_test

import (
	"net/netip"
	"net/url"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/egress"
	"github.com/visorhq/visor/services/fault"
)

// TestCheckURLRefusesWhatTheClientMustNotReach: only absolute https URLs
// of public hosts pass; a development host may use http and a private
// address.
func TestCheckURLRefusesWhatTheClientMustNotReach(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		"https://hooks.example.com/visor?x=1": true,
		"https://93.184.215.14/hook":          true,
		"https://[2606:4700::1111]/hook":      true,
		"https://203.0.113.9/hook":            false,
		"https://198.18.0.1/":                 false,
		"https://[64:ff9b::a00:1]/":           false,
		"https://[::ffff:192.168.0.1]/":       false,
		"https://2130706433/":                 false,
		"https://0x7f.1/":                     false,
		"https://localhost./":                 false,
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
	_, err := egress.CheckURL("https://100.64.0.1/", nil)
	require.ErrorIs(t, err, egress.ErrNotPublic, "a refused destination is told from a malformed URL")
	_, err = egress.CheckURL("https://u:p@hooks.example.com/", nil)
	require.NotErrorIs(t, err, egress.ErrNotPublic)
	u, err := egress.CheckURL("http://127.0.0.1:8080/hook", []string{"127.0.0.1"})
	require.NoError(t, err)
	require.Equal(t, "http://127.0.0.1:8080/hook", u)
}

// FuzzCheckURL: no input panics, and what passes is an https URL whose
// host, when an address, is Public.
func FuzzCheckURL(f *testing.F) {
	f.Add("https://hooks.example.com/x")
	f.Add("http://[::1]:80/")
	f.Add("https://[::ffff:a00:1]/")
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := egress.CheckURL(raw, nil)
		if err != nil {
			return
		}
		p, perr := url.Parse(u)
		if perr != nil || p.Scheme != "https" {
			t.Fatalf("passed %q as %q", raw, u)
		}
		if ip, aerr := netip.ParseAddr(p.Hostname()); aerr == nil && !egress.Public(ip) {
			t.Fatalf("passed %q naming %s", raw, ip)
		}
	})
}
