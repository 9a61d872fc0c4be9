package identity

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
)

// Service applies the identity rules on top of a Store and announces every
// committed policy change. It is the only writer of identity rows: the admin
// API, the CLI, `visor dev` and the MCP tools all go through it.
type Service struct {
	store Store
	pub   changes.Publisher
	log   *slog.Logger
	now   func() time.Time

	// verify checks a password against a stored hash (VerifySecret; tests
	// count its calls).
	verify func(hash, secret string) bool

	// sources, when set, refuses agent settings naming a database source
	// the tenant does not have (SetSourceNames).
	sources SourceNames
}

// NewService returns a Service. pub may be changes.Discard{}.
func NewService(store Store, pub changes.Publisher, log *slog.Logger) *Service {
	return &Service{store: store, pub: pub, log: log, now: time.Now, verify: VerifySecret}
}

// publish announces a committed change. A failure is logged, not returned:
// the change is durable and replicas reconcile against the policy version.
func (s *Service) publish(ctx context.Context, e changes.Event) {
	if err := s.pub.Publish(ctx, e); err != nil {
		s.log.WarnContext(ctx, "publish change event", "tenant", e.TenantID, "kind", e.Kind, "err", err)
	}
}

// Announce publishes a committed change to credentials kept outside this
// service (OAuth grants and consents, round tokens), so every replica drops
// what it cached about the tenant. Like every publication it is logged,
// not returned, on failure.
func (s *Service) Announce(ctx context.Context, e changes.Event) { s.publish(ctx, e) }

// CreateTenant validates and creates a tenant.
func (s *Service) CreateTenant(ctx context.Context, slug, name string) (Tenant, error) {
	slug = strings.TrimSpace(slug)
	if !ValidSlug(slug) {
		return Tenant{}, fault.New(fault.Invalid, "tenant slug %q must be 3-40 lower-case letters, digits or inner hyphens", slug)
	}
	if err := checkText("tenant name", name, 1, 200); err != nil {
		return Tenant{}, err
	}
	t := Tenant{ID: uuid.New(), Slug: slug, Name: strings.TrimSpace(name)}
	if err := s.store.CreateTenant(ctx, &t); err != nil {
		return Tenant{}, err
	}
	return t, nil
}

// UpdateTenant applies fn to the tenant and saves it, then announces the
// change.
func (s *Service) UpdateTenant(ctx context.Context, id uuid.UUID, fn func(*Tenant) error) (Tenant, error) {
	t, v, err := s.store.UpdateTenant(ctx, id, func(t *Tenant) error {
		if err := fn(t); err != nil {
			return err
		}
		if err := checkText("tenant name", t.Name, 1, 200); err != nil {
			return err
		}
		return ValidateTenantSettings(t.Settings)
	})
	if err != nil {
		return Tenant{}, err
	}
	s.publish(ctx, changes.Event{TenantID: id, Kind: changes.TenantSettings, Version: v})
	return t, nil
}

// Authenticate returns the member with email whose password matches. Every
// failure is the same fault.Unauthorized, and takes the same time: when no
// member has the email (or the member has no password), the password is
// compared with a dummy hash all the same, so neither the answer nor its timing
// tells a caller who is a member.
func (s *Service) Authenticate(ctx context.Context, tenantID uuid.UUID, email, password string) (Member, error) {
	m, err := s.store.MemberByEmail(ctx, tenantID, strings.ToLower(strings.TrimSpace(email)))
	if err != nil && !fault.Is(err, fault.NotFound) {
		return Member{}, err
	}
	hash := m.PasswordHash
	if err != nil || hash == "" {
		hash = dummyHash()
	}
	if !s.verify(hash, password) || err != nil || m.PasswordHash == "" {
		return Member{}, fault.New(fault.Unauthorized, "wrong email or password")
	}
	return m, nil
}

// dummyHash is what a sign-in for no member is compared with: a hash made
// with the same parameters as members' passwords, of a secret nobody sends
// (its random salt makes any password miss it).
var dummyHash = sync.OnceValue(func() string { return HashSecret("no member has this password") })

func checkPassword(p string) error {
	if len(p) < 10 || len(p) > 256 {
		return fault.New(fault.Invalid, "password must be 10-256 bytes long")
	}
	return nil
}

func checkText(what, v string, min, max int) error {
	n := len(strings.TrimSpace(v))
	if n < min || len(v) > max {
		return fault.New(fault.Invalid, "%s must be %d-%d bytes long", what, min, max)
	}
	return nil
}
