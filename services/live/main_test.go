package live_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves a hub goroutine behind:
// every worker, reconciler and notification has an owner and a stop path.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// pgx and the test database pool keep background goroutines of their own.
		goleak.IgnoreTopFunction("github.com/jackc/pgx/v5/pgxpool.(*Pool).backgroundHealthCheck"),
		goleak.IgnoreAnyFunction("github.com/jackc/puddle/v2.(*Pool).CreateResource"),
	)
}
