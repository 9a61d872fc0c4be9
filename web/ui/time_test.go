package ui_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/identity"
)

// TestTimesFollowTheTenantsZone: with a time zone in the tenant's settings
// every page writes times there, in one format per language (the audit
// log adds seconds), and no UTC stamp is left.
func TestTimesFollowTheTenantsZone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	_, err := e.ids.UpdateTenant(ctx, e.a.ID, func(tn *identity.Tenant) error { tn.Settings.TimeZone = "Asia/Tokyo"; return nil })
	require.NoError(t, err)
	ada := e.scopedAgent("ada", "x_a")
	e.request(ada, "x_a")
	at := time.Date(2026, 3, 4, 23, 30, 15, 0, time.UTC) // 08:30:15 on the 5th in Tokyo
	require.NoError(t, e.audit.Record(ctx, audit.Entry{ID: uuid.New(), TenantID: e.a.ID, PrincipalKind: "employee", PrincipalID: "agent:" + ada.ID.String(),
		Tool: "x_a", Outcome: audit.OutcomeRefused, Event: "permission_denied", At: at}))
	b := e.browser()
	e.signIn(b, identity.RoleOwner)
	for lang, want := range map[string]string{"en": "5 Mar 2026 08:30:15 JST", "ja": "2026年3月5日 08:30:15 JST"} {
		p := b.get("/t/acme/dashboard/audit", "Accept-Language", lang)
		require.Equal(t, http.StatusOK, p.status)
		require.Contains(t, p.body, want, lang)
		req := b.get("/t/acme/dashboard/requests", "Accept-Language", lang)
		require.Regexp(t, map[string]*regexp.Regexp{"en": regexp.MustCompile(`\d{1,2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2} JST`),
			"ja": regexp.MustCompile(`\d{4}年\d{1,2}月\d{1,2}日 \d{2}:\d{2} JST`)}[lang], req.body)
		require.NotRegexp(t, `\d{2}:\d{2}(:\d{2})? UTC`, req.body+p.body, "no time is left in UTC (%s)", lang)
	}
}
