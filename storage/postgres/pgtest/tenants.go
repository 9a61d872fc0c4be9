package pgtest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/storage/postgres"
)

// Tenants is the setup of a tenant-isolation test: two tenants on one
// database, acme (A) and globex (B), made through the identity service,
// to which a test adds the members and employees it needs. The test
// does something as one tenant and checks that the other sees nothing of
// it: another tenant's row is not-found, like a missing one.
type Tenants struct {
	DB    *postgres.DB
	Store *postgres.IdentityStore
	// IDs is the identity service the rows are made through; it announces
	// nothing.
	IDs  *identity.Service
	A, B identity.Tenant
}

// TwoTenants sets up acme and globex on db (a fresh database when db is
// nil).
func TwoTenants(t testing.TB, db *postgres.DB) Tenants {
	t.Helper()
	if db == nil {
		db = New(t)
	}
	store := postgres.NewIdentityStore(db)
	tt := Tenants{DB: db, Store: store, IDs: identity.NewService(store, changes.Discard{}, slog.New(slog.NewTextHandler(io.Discard, nil)))}
	var err error
	if tt.A, err = tt.IDs.CreateTenant(context.Background(), "acme", "Acme"); err != nil {
		t.Fatalf("create tenant acme: %v", err)
	}
	if tt.B, err = tt.IDs.CreateTenant(context.Background(), "globex", "Globex"); err != nil {
		t.Fatalf("create tenant globex: %v", err)
	}
	return tt
}

// Agent adds an AI employee named name to tenant.
func (tt Tenants) Agent(t testing.TB, tenant identity.Tenant, name string) identity.Agent {
	t.Helper()
	a, err := tt.IDs.CreateAgent(context.Background(), tenant.ID, identity.NewAgent{Name: name})
	if err != nil {
		t.Fatalf("create agent %s in %s: %v", name, tenant.Slug, err)
	}
	return a
}

// Member adds a member with email and role to tenant.
func (tt Tenants) Member(t testing.TB, tenant identity.Tenant, email string, role identity.Role) identity.Member {
	t.Helper()
	m, err := tt.IDs.CreateMember(context.Background(), tenant.ID, email, "correct horse battery", role)
	if err != nil {
		t.Fatalf("create member %s in %s: %v", email, tenant.Slug, err)
	}
	return m
}
