package ui_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/visorhq/visor/dbsource"
	"github.com/visorhq/visor/dbsource/dbtest"
	"github.com/visorhq/visor/dbsource/mysql"
	"github.com/visorhq/visor/dbsource/pg"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/secrets"
	"github.com/visorhq/visor/storage/postgres"
)

// follow submits a form and reads the page its answer redirects to.
func follow(t *testing.T, b *browser, from, path string, form url.Values) page {
	t.Helper()
	res := b.submit(from, path, form)
	require.Equal(t, http.StatusSeeOther, res.status, res.body)
	return b.get(strings.TrimPrefix(res.header.Get("Location"), b.e.base))
}

// newDBSources is the database sources service over db, reaching loopback
// databases, with a fresh secret key.
func newDBSources(t testing.TB, db *postgres.DB, pub changes.Publisher, log *slog.Logger) *dbsources.Service {
	entry, err := secrets.NewKey("ui")
	require.NoError(t, err)
	keys, err := secrets.ParseKeyring(entry)
	require.NoError(t, err)
	allow := dbsource.Allow{Nets: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	pgd, myd := pg.New(allow), mysql.New(allow)
	t.Cleanup(pgd.Close)
	t.Cleanup(myd.Close)
	return dbsources.NewService(postgres.NewDBSourceStore(db), keys,
		map[dbsources.Kind]dbsources.Driver{dbsources.Postgres: pgd, dbsources.MySQL: myd}, pub, log)
}

// TestDatabaseSourcesPage: every member reads the list (never a password);
// only those who manage settings see the form and may add (after a test
// connection, with its error shown when it fails), test and remove; a
// removal takes the name out of the employees' settings and announces it;
// another tenant's owner sees none of it.
func TestDatabaseSourcesPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tdb := dbtest.NewPostgres(t)
	const page = "/t/acme/dashboard/dbsources"
	conn := tdb.URL(dbtest.Role{User: tdb.Reader.User}) // the password goes in its own field

	owner := e.browser()
	e.signIn(owner, identity.RoleOwner)
	p := owner.get(page)
	require.Equal(t, http.StatusOK, p.status, p.body)
	require.Contains(t, p.body, "No database sources yet.")
	require.Contains(t, p.body, `name="connection_string"`)

	bad := owner.submit(page, page, url.Values{"name": {"sales"}, "connection_string": {strings.Replace(conn, tdb.Database, "nope_db", 1)},
		"password": {tdb.Reader.Password}})
	require.Equal(t, http.StatusBadRequest, bad.status)
	require.Contains(t, bad.body, "nope_db")
	require.NotContains(t, bad.body, tdb.Reader.Password, "the password is never drawn back")

	ok := follow(t, owner, page, page, url.Values{"name": {"sales"}, "connection_string": {conn}, "password": {tdb.Reader.Password},
		"schemas": {"public"}, "max_rows": {"50"}, "description": {"Accounts"}})
	require.Equal(t, http.StatusOK, ok.status, ok.body)
	require.Contains(t, ok.body, "Source added")
	require.Contains(t, ok.body, "sales")
	require.Contains(t, ok.body, "50 rows")
	require.NotContains(t, ok.body, tdb.Reader.Password)
	src, err := e.dbs.Source(context.Background(), e.a.ID, "sales")
	require.NoError(t, err)
	require.True(t, src.PasswordSet)
	for _, r := range e.rows("createDBSource") {
		require.NotContains(t, r.Change, tdb.Reader.Password, "the audit row masks the password")
	}
	require.Contains(t, owner.get(page, "Accept-Language", "ja").body, "データベースソース")

	viewer := e.browser()
	e.signIn(viewer, identity.RoleViewer)
	vp := viewer.get(page)
	require.Equal(t, http.StatusOK, vp.status)
	require.Contains(t, vp.body, "sales")
	require.NotContains(t, vp.body, `name="connection_string"`, "no form for those who cannot manage settings")
	require.Equal(t, http.StatusForbidden, viewer.submit(page, page+"/"+src.ID.String()+"/remove", nil).status)

	globex := e.browser()
	e.signInAs(globex, "globex", "bob@globex.test")
	gp := globex.get("/t/globex/dashboard/dbsources")
	require.NotContains(t, gp.body, "sales")
	require.Equal(t, http.StatusNotFound, globex.submit("/t/globex/dashboard/dbsources", "/t/globex/dashboard/dbsources/"+src.ID.String()+"/remove", nil).status)

	tested := follow(t, owner, page, page+"/"+src.ID.String()+"/test", nil)
	require.Contains(t, tested.body, "The test connection succeeded.")

	ada, err := e.ids.CreateAgent(context.Background(), e.a.ID, identity.NewAgent{Name: "ada", Settings: identity.AgentSettings{
		Capabilities: identity.Capabilities{DBSources: []string{"sales"}}}})
	require.NoError(t, err)
	before := len(e.published())
	gone := follow(t, owner, page, page+"/"+src.ID.String()+"/remove", nil)
	require.Contains(t, gone.body, "Source removed")
	require.Contains(t, gone.body, "No database sources yet.")
	a, err := e.store.Agent(context.Background(), e.a.ID, ada.ID)
	require.NoError(t, err)
	require.Empty(t, a.Settings.Capabilities.DBSources)
	events := e.published()[before:]
	require.Len(t, events, 1)
	require.Equal(t, changes.Event{TenantID: e.a.ID, Kind: changes.AgentChanged, AgentID: ada.ID, Version: events[0].Version}, events[0])
	require.Len(t, e.rows("deleteDBSource"), 3, "the refused viewer, the other tenant's owner, the removal")
}
