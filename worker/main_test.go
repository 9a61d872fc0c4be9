package worker_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a runner leaves goroutines behind after
// Stop.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
