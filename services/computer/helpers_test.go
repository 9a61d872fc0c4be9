package computer

import (
	"testing"

	"github.com/google/uuid"
)

func mustUUID(t *testing.T) uuid.UUID {
	t.Helper()
	return uuid.New()
}
