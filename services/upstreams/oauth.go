package upstreams

import (
	"context"

	"github.com/visorhq/visor/services/fault"
)

// authorize sets what t authenticates with for srv's auth kind.
func (s *Service) authorize(ctx context.Context, srv Server, t *Target) error {
	switch srv.Auth.Kind {
	case AuthNone, "":
		return nil
	}
	return fault.New(fault.Unavailable, "upstream server %s needs OAuth (%s), which this deployment cannot do yet", srv.Name, srv.Auth.Kind)
}

// revokeAll revokes the tokens Visor held for a removed server.
func (s *Service) revokeAll(ctx context.Context, srv Server, tokens []Token) {}
