package upstreams

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// connectTimeout bounds opening a session (a save's test connection, or
// the first call after a session was closed).
const connectTimeout = 15 * time.Second

// Create validates in, saves the server and refreshes its tools (a test
// connection: a server that cannot be listed is saved with its error, so
// an operator can add its secrets and refresh). Errors: Invalid with what
// is wrong, Conflict for a name in use or a full registry.
func (s *Service) Create(ctx context.Context, tenantID uuid.UUID, in Input, by string) (Server, error) {
	if err := s.checkName(ctx, tenantID, in.Name); err != nil {
		return Server{}, err
	}
	srv := Server{ID: uuid.New(), TenantID: tenantID, Name: in.Name, CreatedBy: by, Version: 1}
	if err := s.apply(&srv, in); err != nil {
		return Server{}, err
	}
	if err := s.checkSaved(ctx, tenantID, in); err != nil {
		return Server{}, err
	}
	if err := s.cfg.Store.Create(ctx, &srv, maxServers); err != nil {
		if fault.Is(err, fault.Conflict) {
			return Server{}, fault.Newf(fault.Conflict, err, "a server named %q already exists, or the tenant holds %d servers already", in.Name, maxServers)
		}
		return Server{}, err
	}
	if srv.Enabled {
		_ = s.refresh(ctx, srv, ctxMember(ctx, srv)) // its error is saved on the row
	}
	return s.cfg.Store.Server(ctx, tenantID, srv.ID)
}

// checkSaved refuses to save a stdio server whose image is off its
// tenant's allow list.
func (s *Service) checkSaved(ctx context.Context, tenantID uuid.UUID, in Input) error {
	if in.Transport != Stdio {
		return nil
	}
	return s.checkImage(ctx, tenantID, in.Image, fault.Invalid)
}

func (s *Service) checkName(ctx context.Context, tenantID uuid.UUID, name string) error {
	if !ValidName(name) {
		return fault.New(fault.Invalid, "name %q must be 1-32 lower-case letters, digits or '-', starting with a letter", name)
	}
	own := "visor"
	if s.cfg.ServerName != nil {
		n, err := s.cfg.ServerName(ctx, tenantID)
		if err != nil {
			return err
		}
		if n != "" {
			own = n
		}
	}
	if slices.Contains(reservedNames, name) || name == own {
		return fault.New(fault.Invalid, "name %q is the name Visor's own tools go by; choose another", name)
	}
	return nil
}

// apply validates in onto srv.
func (s *Service) apply(srv *Server, in Input) error {
	if err := in.checkShape(); err != nil {
		return err
	}
	if in.Transport.Remote() {
		u, err := s.checkURL(in.URL)
		if err != nil {
			return err
		}
		in.URL = u
	}
	srv.Transport, srv.URL, srv.Image, srv.Command, srv.AllowHosts = in.Transport, in.URL, in.Image, nonNil(in.Command), nonNil(in.AllowHosts)
	srv.Auth, srv.Limits, srv.Description, srv.Enabled = in.Auth, in.Limits, strings.TrimSpace(in.Description), !in.Disabled
	if in.Auth.Kind != AuthNone {
		srv.Auth.Resource = in.URL
	}
	// Only Visor registers itself: a client id given by the operator is
	// used as given.
	srv.Auth.Registration, srv.Auth.RedirectURI = "", ""
	return nil
}

func (s *Service) checkURL(raw string) (string, error) {
	if s.cfg.CheckURL == nil {
		return "", fault.New(fault.Unavailable, "remote servers are not available in this deployment")
	}
	u, err := s.cfg.CheckURL(raw)
	if err != nil {
		return "", fault.Newf(fault.Invalid, err, "url: %s", fault.Message(err))
	}
	return u, nil
}

// Update changes a server (not its name). Errors as Create's, and
// NotFound.
func (s *Service) Update(ctx context.Context, tenantID uuid.UUID, ref string, in Input) (Server, error) {
	old, err := s.Server(ctx, tenantID, ref)
	if err != nil {
		return Server{}, err
	}
	if err := s.checkSaved(ctx, tenantID, in); err != nil { // outside the row's lock
		return Server{}, err
	}
	srv, err := s.cfg.Store.Update(ctx, tenantID, old.ID, func(srv *Server) error {
		if in.Name != "" && in.Name != srv.Name {
			return fault.New(fault.Invalid, "a server cannot be renamed; remove it and add it under the new name")
		}
		auth := srv.Auth
		if err := s.apply(srv, in); err != nil {
			return err
		}
		if in.Auth.Kind == auth.Kind && (in.Auth.ClientID == "" || in.Auth.ClientID == auth.ClientID) {
			// Keep what was registered and discovered.
			srv.Auth.ClientID, srv.Auth.Issuer, srv.Auth.AuthorizationEndpoint = auth.ClientID, auth.Issuer, auth.AuthorizationEndpoint
			srv.Auth.TokenEndpoint, srv.Auth.RevocationEndpoint = auth.TokenEndpoint, auth.RevocationEndpoint
			srv.Auth.RegistrationEndpoint, srv.Auth.MetadataDocuments = auth.RegistrationEndpoint, auth.MetadataDocuments
			srv.Auth.CodeChallengeMethods, srv.Auth.Registration, srv.Auth.RedirectURI = auth.CodeChallengeMethods, auth.Registration, auth.RedirectURI
		}
		return nil
	})
	if err != nil {
		return Server{}, err
	}
	s.changed(srv)
	if srv.Enabled {
		_ = s.refresh(ctx, srv, ctxMember(ctx, srv))
	}
	return s.cfg.Store.Server(ctx, tenantID, srv.ID)
}

// SetEnabled switches a server on or off. Off, it is gone from search and
// its tools are refused at once, on every replica (they read the row).
func (s *Service) SetEnabled(ctx context.Context, tenantID uuid.UUID, ref string, on bool) (Server, error) {
	old, err := s.Server(ctx, tenantID, ref)
	if err != nil {
		return Server{}, err
	}
	srv, err := s.cfg.Store.Update(ctx, tenantID, old.ID, func(srv *Server) error { srv.Enabled = on; return nil })
	if err != nil {
		return Server{}, err
	}
	s.changed(srv)
	if on {
		_ = s.refresh(ctx, srv, ctxMember(ctx, srv))
		return s.cfg.Store.Server(ctx, tenantID, srv.ID)
	}
	return srv, nil
}

// Remove deletes a server with its secrets and tools, and revokes the
// OAuth tokens Visor held for it (best effort: the tokens are deleted
// whether or not the server accepts the revocation).
func (s *Service) Remove(ctx context.Context, tenantID uuid.UUID, ref string) (Server, error) {
	old, err := s.Server(ctx, tenantID, ref)
	if err != nil {
		return Server{}, err
	}
	// What revocation needs goes with the server's secrets: read it first.
	var auth Auth
	var secret string
	revoke := s.oauth != nil && old.Auth.Kind != AuthNone
	if revoke {
		if auth, secret, err = s.oauthClient(ctx, old); err != nil {
			s.cfg.Log.WarnContext(ctx, "revoke upstream tokens", "server", old.Name, "err", err)
			revoke = false
		}
	}
	srv, tokens, err := s.cfg.Store.Delete(ctx, tenantID, old.ID)
	if err != nil {
		return Server{}, err
	}
	s.changed(srv)
	if revoke {
		s.revokeAll(ctx, srv, auth, secret, tokens)
	}
	return srv, nil
}

// Refresh lists the server's tools again and saves them. Errors:
// NotFound, Conflict for a disabled server, Unavailable with what failed.
func (s *Service) Refresh(ctx context.Context, tenantID uuid.UUID, ref string) (Server, error) {
	srv, err := s.Server(ctx, tenantID, ref)
	if err != nil {
		return Server{}, err
	}
	if !srv.Enabled {
		return Server{}, fault.New(fault.Conflict, "server %s is disabled; enable it first", srv.Name)
	}
	if err := s.refresh(ctx, srv, ctxMember(ctx, srv)); err != nil {
		return Server{}, err
	}
	return s.cfg.Store.Server(ctx, tenantID, srv.ID)
}

// refresh lists srv's tools through its kept session (carrying member's
// token, for a server with one per member) and saves them; a failure is
// saved as the server's last error and returned.
func (s *Service) refresh(ctx context.Context, srv Server, member uuid.UUID) error {
	ctx, cancel := context.WithTimeout(ctx, srv.Limits.Timeout+connectTimeout)
	defer cancel()
	list, err := s.listTools(ctx, srv, member)
	msg := ""
	if err != nil {
		msg = fault.Message(err)
		if len(msg) > 500 {
			msg = msg[:500]
		}
	}
	if serr := s.cfg.Store.SaveTools(context.WithoutCancel(ctx), srv.TenantID, srv.ID, srv.Version, list, msg); serr != nil {
		return serr
	}
	if err != nil {
		return fault.Newf(fault.Unavailable, err, "listing the tools of %s failed: %s", srv.Name, msg)
	}
	s.guards.reset(srv.ID)
	return nil
}

func (s *Service) listTools(ctx context.Context, srv Server, member uuid.UUID) ([]Tool, error) {
	sess, err := s.session(ctx, srv, member)
	if err != nil {
		return nil, err
	}
	list, err := sess.Tools(ctx, MaxTools)
	if err != nil {
		s.pool.forgetMember(srv.ID, member)
		return nil, err
	}
	return cleanTools(srv.Name, list)
}

// Server returns one server of the tenant by id or name, with its secret
// names.
func (s *Service) Server(ctx context.Context, tenantID uuid.UUID, ref string) (Server, error) {
	var srv Server
	var err error
	if id, perr := uuid.Parse(ref); perr == nil {
		srv, err = s.cfg.Store.Server(ctx, tenantID, id)
	} else {
		srv, err = s.cfg.Store.ServerByName(ctx, tenantID, ref)
	}
	if err != nil {
		return Server{}, err
	}
	return srv, nil
}

// List returns the tenant's servers with their secret names.
func (s *Service) List(ctx context.Context, tenantID uuid.UUID) ([]Server, error) {
	return s.cfg.Store.List(ctx, tenantID)
}

// changed drops what this replica keeps of srv's older versions.
func (s *Service) changed(srv Server) {
	s.pool.forget(srv.ID)
	s.guards.reset(srv.ID)
}

func nonNil(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}
