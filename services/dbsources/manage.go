package dbsources

import (
	"context"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/fault"
)

// Input is what an operator gives to save a source.
type Input struct {
	Name string
	// URL is the connection string, with its password. On an update, ""
	// keeps the endpoint and password as they are.
	URL         string
	Schemas     []string
	Tables      []string
	Limits      Limits
	Description string
}

// Create validates in, test-connects to the source and saves it with its
// password sealed. Errors: Invalid (with what is wrong, including a failed
// test connection), Conflict for a name in use, Unavailable when no secret
// key is configured for a password.
func (s *Service) Create(ctx context.Context, tenantID uuid.UUID, in Input, by string) (Source, error) {
	if !ValidName(in.Name) {
		return Source{}, fault.New(fault.Invalid, "name %q must be 1-63 lower-case letters, digits, '-' or '_', starting with a letter", in.Name)
	}
	if in.URL == "" {
		return Source{}, fault.New(fault.Invalid, "url (the connection string) is required")
	}
	src := Source{ID: uuid.New(), TenantID: tenantID, Name: in.Name, CreatedBy: by, UpdatedAt: time.Now()}
	if err := s.apply(ctx, &src, in); err != nil {
		return Source{}, err
	}
	if err := s.store.Create(ctx, &src, maxSources); err != nil {
		if fault.Is(err, fault.Conflict) {
			return Source{}, fault.Newf(fault.Conflict, err, "a source named %q already exists, or the tenant holds %d sources already", in.Name, maxSources)
		}
		return Source{}, err
	}
	return src, nil
}

// Update changes a source (not its name) and test-connects again. Errors
// as Create's, and NotFound.
func (s *Service) Update(ctx context.Context, tenantID, id uuid.UUID, in Input) (Source, error) {
	var old string
	src, err := s.store.Update(ctx, tenantID, id, func(src *Source) error {
		if in.Name != "" && in.Name != src.Name {
			return fault.New(fault.Invalid, "a source cannot be renamed; remove it and add it under the new name")
		}
		old = targetKey(*src)
		src.UpdatedAt = time.Now()
		return s.apply(ctx, src, in)
	})
	if err != nil {
		return Source{}, err
	}
	s.forget(src.Kind, old)
	return src, nil
}

// apply validates in onto src, seals a new password and test-connects.
func (s *Service) apply(ctx context.Context, src *Source, in Input) error {
	if len(in.Description) > 500 {
		return fault.New(fault.Invalid, "description must be at most 500 bytes")
	}
	if err := checkAllowList("schemas", in.Schemas, false); err != nil {
		return err
	}
	if err := checkAllowList("tables", in.Tables, true); err != nil {
		return err
	}
	if err := in.Limits.Check(); err != nil {
		return err
	}
	src.Schemas, src.Tables, src.Limits, src.Description = nonNil(in.Schemas), nonNil(in.Tables), in.Limits, strings.TrimSpace(in.Description)
	if in.URL != "" {
		kind, ep, password, err := ParseURL(in.URL)
		if err != nil {
			return err
		}
		src.Kind, src.Endpoint, src.SealedPassword, src.PasswordSet = kind, ep, "", password != ""
		if password != "" {
			if s.keys == nil {
				return fault.New(fault.Unavailable, "no secret key is configured, so a password cannot be stored (docs/secrets.md)")
			}
			if src.SealedPassword, err = s.keys.Seal([]byte(password), sealContext(src.TenantID, src.ID)); err != nil {
				return err
			}
		}
	}
	return s.check(ctx, *src)
}

// check test-connects to src, as the save's last step.
func (s *Service) check(ctx context.Context, src Source) error {
	d, err := s.driver(src.Kind)
	if err != nil {
		return err
	}
	t, err := s.target(src)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	if err := d.Check(ctx, t); err != nil {
		return fault.Newf(fault.Invalid, err, "the test connection to %s failed: %s", src.Endpoint.Host, fault.Message(err))
	}
	return nil
}

// Remove deletes a source, takes its name out of every employee's
// settings and announces each employee changed, so the streams whose
// visible tools change get list_changed.
func (s *Service) Remove(ctx context.Context, tenantID, id uuid.UUID) (Source, error) {
	src, agents, v, err := s.store.Delete(ctx, tenantID, id)
	if err != nil {
		return Source{}, err
	}
	s.forget(src.Kind, targetKey(src))
	for _, a := range agents {
		e := changes.Event{TenantID: tenantID, Kind: changes.AgentChanged, AgentID: a, Version: v}
		if err := s.pub.Publish(ctx, e); err != nil {
			s.log.WarnContext(ctx, "publish db source removal", "tenant", tenantID, "agent", a, "err", err)
		}
	}
	return src, nil
}

// Source returns one source of the tenant by id or name.
func (s *Service) Source(ctx context.Context, tenantID uuid.UUID, ref string) (Source, error) {
	if id, err := uuid.Parse(ref); err == nil {
		return s.store.Source(ctx, tenantID, id)
	}
	return s.store.SourceByName(ctx, tenantID, ref)
}

func (s *Service) forget(k Kind, key string) {
	if d, ok := s.drivers[k]; ok {
		d.Forget(key)
	}
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

// Test connects to a saved source as a save does. Errors: NotFound, and
// Invalid with what failed.
func (s *Service) Test(ctx context.Context, tenantID uuid.UUID, ref string) (Source, error) {
	src, err := s.Source(ctx, tenantID, ref)
	if err != nil {
		return Source{}, err
	}
	return src, s.check(ctx, src)
}
