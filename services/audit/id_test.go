package audit

import (
	"bytes"
	"testing"
)

// TestNewIDsAreTimeOrdered: audit row ids are UUIDv7, and ids made one
// after another sort one after another, so new rows go to the end of the
// trail's (tenant, id) key.
func TestNewIDsAreTimeOrdered(t *testing.T) {
	prev := NewID()
	for range 10000 {
		id := NewID()
		if id.Version() != 7 {
			t.Fatalf("id %s is version %d, want 7", id, id.Version())
		}
		if bytes.Compare(prev[:], id[:]) >= 0 {
			t.Fatalf("id %s made after %s sorts before it", id, prev)
		}
		prev = id
	}
}
