package upstreams

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/fault"
)

// SetSecret seals and saves one secret of a server: an environment value
// (env), a header (header; a static bearer is the header Authorization
// with the value "Bearer <token>") or the OAuth client secret. The
// server's kept sessions are closed, so the next call uses it. Errors:
// Invalid, NotFound, Unavailable when no secret key is configured.
func (s *Service) SetSecret(ctx context.Context, tenantID uuid.UUID, ref string, kind SecretKind, name, value string) (Server, error) {
	srv, err := s.Server(ctx, tenantID, ref)
	if err != nil {
		return Server{}, err
	}
	if err := checkSecret(kind, name, value); err != nil {
		return Server{}, err
	}
	if kind == SecretEnv && srv.Transport != Stdio {
		return Server{}, fault.New(fault.Invalid, "%s is a remote server: give it a header (kind header), not an environment variable", srv.Name)
	}
	if kind == SecretHeader && srv.Transport == Stdio {
		return Server{}, fault.New(fault.Invalid, "%s is a stdio server: give it an environment variable (kind env), not a header", srv.Name)
	}
	if s.cfg.Keys == nil {
		return Server{}, fault.New(fault.Unavailable, "no secret key is configured, so a secret cannot be stored (docs/secrets.md)")
	}
	sealed, err := s.cfg.Keys.Seal([]byte(value), secretContext(srv, kind, name))
	if err != nil {
		return Server{}, err
	}
	if err := s.cfg.Store.SetSecret(ctx, tenantID, srv.ID, Secret{Kind: kind, Name: name, Sealed: sealed}, maxSecrets); err != nil {
		return Server{}, err
	}
	s.changed(srv)
	return s.cfg.Store.Server(ctx, tenantID, srv.ID)
}

// UnsetSecret removes one secret. Errors: NotFound.
func (s *Service) UnsetSecret(ctx context.Context, tenantID uuid.UUID, ref string, kind SecretKind, name string) (Server, error) {
	srv, err := s.Server(ctx, tenantID, ref)
	if err != nil {
		return Server{}, err
	}
	if err := s.cfg.Store.DeleteSecret(ctx, tenantID, srv.ID, kind, name); err != nil {
		return Server{}, err
	}
	s.changed(srv)
	return s.cfg.Store.Server(ctx, tenantID, srv.ID)
}

func secretContext(srv Server, kind SecretKind, name string) string {
	return sealContext(srv.TenantID, srv.ID, string(kind)+":"+name)
}

// target builds srv's Target for member's token (uuid.Nil: the
// tenant's, or none), opening its secrets.
func (s *Service) target(ctx context.Context, srv Server, member uuid.UUID) (Target, error) {
	t := Target{Key: srv.TenantID.String() + "/" + srv.ID.String() + "/" + strconv.FormatInt(srv.Version, 10), Server: srv,
		Member: member, Headers: map[string]string{}, Env: map[string]string{}}
	secs, err := s.cfg.Store.Secrets(ctx, srv.TenantID, srv.ID)
	if err != nil {
		return t, err
	}
	for _, sec := range secs {
		if sec.Kind == SecretClientSecret {
			continue
		}
		if s.cfg.Keys == nil {
			return t, fault.New(fault.Unavailable, "upstream server %s: no secret key is configured to open its secrets", srv.Name)
		}
		v, err := s.cfg.Keys.Open(sec.Sealed, secretContext(srv, sec.Kind, sec.Name))
		if err != nil {
			return t, fault.Newf(fault.Unavailable, err, "upstream server %s: its secret %s cannot be opened with the configured secret keys", srv.Name, sec.Name)
		}
		if sec.Kind == SecretEnv {
			t.Env[sec.Name] = string(v)
		} else {
			t.Headers[sec.Name] = string(v)
		}
	}
	tenantID, id := srv.TenantID, srv.ID
	t.ToolsChanged = func() { s.refreshLater(tenantID, id, member) }
	return t, nil
}

// session returns srv's kept session carrying member's token (uuid.Nil:
// the tenant's, or none), connecting when there is none.
func (s *Service) session(ctx context.Context, srv Server, member uuid.UUID) (Session, error) {
	c, ok := s.cfg.Connectors[srv.Transport]
	if !ok {
		return nil, fault.New(fault.Unavailable, "the %s transport is not available in this deployment", srv.Transport)
	}
	if srv.Transport == Stdio { // the tenant may have taken the image off its list since
		if err := s.checkImage(ctx, srv.TenantID, srv.Image, fault.Forbidden); err != nil {
			s.pool.forget(srv.ID)
			return nil, err
		}
	}
	return s.pool.get(ctx, srv, member, func(ctx context.Context) (Session, error) {
		t, err := s.target(ctx, srv, member)
		if err != nil {
			return nil, err
		}
		if err := s.authorize(ctx, srv, &t); err != nil {
			return nil, err
		}
		// The session outlives this call; only its opening is bounded.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), connectTimeout)
		defer cancel()
		sess, err := c.Connect(cctx, t)
		if err != nil {
			return nil, fault.Newf(fault.CodeOf(asUnavailable(err)), err, "cannot connect to upstream server %s: %s", srv.Name, fault.Message(asUnavailable(err)))
		}
		return sess, nil
	})
}

// asUnavailable keeps a coded error's code and makes any other error
// Unavailable with its text.
func asUnavailable(err error) error {
	if fault.CodeOf(err) != fault.Internal {
		return err
	}
	return fault.Newf(fault.Unavailable, err, "%s", err.Error())
}

// refreshLater refreshes a server's tools in the background, when it said
// they changed (notifications/tools/list_changed).
func (s *Service) refreshLater(tenantID, id, member uuid.UUID) {
	base := s.ctx.Load()
	if base == nil {
		return // not started: an operator's refresh picks the change up
	}
	// A server that floods list_changed gets one refresh at a time, and
	// one more after it when it changed again meanwhile.
	again := &atomic.Bool{}
	if prev, busy := s.refreshing.LoadOrStore(id, again); busy {
		prev.(*atomic.Bool).Store(true)
		return
	}
	s.Go(func() {
		for first := true; first || again.Swap(false); first = false {
			s.refreshOnce(*base, tenantID, id, member)
		}
		s.refreshing.Delete(id)
		if again.Load() { // a change came between the last check and the delete
			s.refreshLater(tenantID, id, member)
		}
	})
}

func (s *Service) refreshOnce(base context.Context, tenantID, id, member uuid.UUID) {
	ctx, cancel := context.WithTimeout(base, maxLimits.Timeout)
	defer cancel()
	srv, err := s.cfg.Store.Server(ctx, tenantID, id)
	if err != nil || !srv.Enabled {
		return
	}
	if err := s.refresh(ctx, srv, member); err != nil {
		s.cfg.Log.WarnContext(ctx, "refresh after tools/list_changed", "tenant", tenantID, "server", srv.Name, "err", err)
	}
}
