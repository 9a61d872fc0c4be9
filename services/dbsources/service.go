package dbsources

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/secrets"
)

// Store keeps a tenant's sources. Every method names its tenant; another
// tenant's source is NotFound.
type Store interface {
	// Create inserts s. Errors: Conflict for a name the tenant already
	// uses, or when the tenant holds max sources already.
	Create(ctx context.Context, s *Source, max int) error
	Source(ctx context.Context, tenantID, id uuid.UUID) (Source, error)
	SourceByName(ctx context.Context, tenantID uuid.UUID, name string) (Source, error)
	// List returns the tenant's sources by name.
	List(ctx context.Context, tenantID uuid.UUID) ([]Source, error)
	// Update applies fn under a row lock and saves the source.
	Update(ctx context.Context, tenantID, id uuid.UUID, fn func(*Source) error) (Source, error)
	// Delete removes the source and its name from the settings of every
	// employee of the tenant, in one transaction, bumping the policy
	// version when an employee changed. It returns the source, the
	// employees changed and the version.
	Delete(ctx context.Context, tenantID, id uuid.UUID) (Source, []uuid.UUID, int64, error)
	// Existing returns which of names the tenant has sources for.
	Existing(ctx context.Context, tenantID uuid.UUID, names []string) ([]string, error)
	secrets.Holder
}

// checkTimeout bounds the test connection of a save.
const checkTimeout = 10 * time.Second

// Service is the only writer of sources and the runner of the db_* tools.
type Service struct {
	store   Store
	keys    *secrets.Keyring
	drivers map[Kind]Driver
	pub     changes.Publisher
	log     *slog.Logger

	mu      sync.Mutex
	running map[uuid.UUID]int // queries running per source on this replica
}

// NewService returns a Service. keys may be nil when no key is configured:
// sources can then be listed and removed but not saved with a password.
// pub may be changes.Discard{}.
func NewService(store Store, keys *secrets.Keyring, drivers map[Kind]Driver, pub changes.Publisher, log *slog.Logger) *Service {
	return &Service{store: store, keys: keys, drivers: drivers, pub: pub, log: log, running: map[uuid.UUID]int{}}
}

// UnknownSources returns the names among names the tenant has no source
// for (identity.SourceNames: employee settings may name only sources that
// exist).
func (s *Service) UnknownSources(ctx context.Context, tenantID uuid.UUID, names []string) ([]string, error) {
	have, err := s.store.Existing(ctx, tenantID, names)
	if err != nil {
		return nil, err
	}
	var unknown []string
	for _, n := range names {
		if !contains(have, n) {
			unknown = append(unknown, n)
		}
	}
	return unknown, nil
}

// target builds the Target of a source, opening its password.
func (s *Service) target(src Source) (Target, error) {
	t := Target{Key: targetKey(src), Kind: src.Kind, Endpoint: src.Endpoint, Limits: src.Limits,
		Scope: Scope{Schemas: src.Schemas, Tables: src.Tables}}
	if src.SealedPassword == "" {
		return t, nil
	}
	if s.keys == nil {
		return t, fault.New(fault.Unavailable, "source %s: no secret key is configured to open its password", src.Name)
	}
	pw, err := s.keys.Open(src.SealedPassword, sealContext(src.TenantID, src.ID))
	if err != nil {
		return t, fault.Newf(fault.Unavailable, err, "source %s: its password cannot be opened with the configured secret keys", src.Name)
	}
	t.Password = string(pw)
	return t, nil
}

func (s *Service) driver(k Kind) (Driver, error) {
	d, ok := s.drivers[k]
	if !ok {
		return nil, fault.New(fault.Unavailable, "the %s driver is not available in this deployment", k)
	}
	return d, nil
}

// sealContext binds a sealed password to its source.
func sealContext(tenantID, id uuid.UUID) string {
	return "db_source:" + tenantID.String() + ":" + id.String()
}

func targetKey(src Source) string {
	return src.TenantID.String() + "/" + src.ID.String() + "/" + strconv.FormatInt(src.UpdatedAt.UnixNano(), 10)
}

// acquire takes one of the source's concurrent-query slots on this
// replica; release gives it back.
func (s *Service) acquire(src Source) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[src.ID] >= src.Limits.MaxConcurrent {
		return nil, fault.New(fault.RateLimited, "source %s is running its limit of %d queries; retry when one finishes", src.Name, src.Limits.MaxConcurrent)
	}
	s.running[src.ID]++
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.running[src.ID]--; s.running[src.ID] <= 0 {
			delete(s.running, src.ID)
		}
	}, nil
}
