package oauth

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/credentials"
	"github.com/visorhq/visor/services/identity"
)

// CreateClient validates m and registers a client of kind (preregistered
// or dynamic) in the tenant. A confidential client's secret is returned
// once and stored as an argon2id hash. Invalid metadata is fault.Invalid.
func (s *Server) CreateClient(ctx context.Context, tenantID uuid.UUID, kind credentials.ClientKind, m ClientMetadata) (credentials.Client, string, error) {
	cl, err := m.toClient(kind)
	if err != nil {
		return cl, "", err
	}
	cl.TenantID, cl.ID = tenantID, newClientID()
	secret := ""
	if !cl.Public() {
		secret = randomToken()
		cl.SecretHash = identity.HashSecret(secret)
	}
	if err := s.store.CreateClient(ctx, &cl); err != nil {
		return cl, "", err
	}
	return cl, secret, nil
}

// newClientID returns an opaque client id for a registered client.
func newClientID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "vc_" + hex.EncodeToString(b[:])
}
