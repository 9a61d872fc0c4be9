package pgtest

import (
	"context"
	"testing"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/storage/postgres"
)

// Task stores an open, unassigned task of tenantID and returns its id, for
// tests that need a real task to name (a round token is minted only for
// one).
func Task(t testing.TB, db *postgres.DB, tenantID uuid.UUID) uuid.UUID {
	t.Helper()
	tk := board.Task{ID: uuid.New(), TenantID: tenantID, Kind: board.KindTask, Title: "a test's work", Status: board.Open,
		CreatorKind: board.ByOperator, CreatedBy: "operator:test", Origin: board.Direct, Tags: []string{}}
	if err := postgres.NewBoardStore(db).CreateTask(context.Background(), &tk, board.Effects{}, 0); err != nil {
		t.Fatalf("store a test task: %v", err)
	}
	return tk.ID
}
