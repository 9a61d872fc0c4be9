package oauth

import (
	"context"
	"errors"

	"github.com/ory/fosite"

	"github.com/visorhq/visor/services/identity"
)

// argonHasher lets fosite check client secrets against Visor's argon2id
// hashes.
type argonHasher struct{}

var _ fosite.Hasher = argonHasher{}

func (argonHasher) Compare(_ context.Context, hash, data []byte) error {
	if len(hash) == 0 || !identity.VerifySecret(string(hash), string(data)) {
		return errors.New("client secret does not match")
	}
	return nil
}

func (argonHasher) Hash(_ context.Context, data []byte) ([]byte, error) {
	return []byte(identity.HashSecret(string(data))), nil
}
