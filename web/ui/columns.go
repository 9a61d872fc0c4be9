package ui

import (
	"context"

	"github.com/google/uuid"

	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/identity"
)

// The board's columns: blocked first (what needs a person), then the work
// in flight, then what is waiting, then the finished.
var columnOrder = []board.Status{board.Blocked, board.InProgress, board.Open, board.Done, board.Cancelled}

const (
	columnCards = 20  // cards shown in a column
	columnScan  = 200 // tasks a column counts; beyond, the count reads "200+"
)

// Column is one status of the board: its count (Over: at least) and its
// newest cards.
type Column struct {
	Status board.Status
	Count  int
	Over   bool
	Tasks  []board.Task
}

// columns reads each status's tasks under filter f, keeping those of
// assignees in dept when dept is set.
func (d *Dashboard) columns(ctx context.Context, tenantID uuid.UUID, f board.TaskFilter, dept string, agents []identity.Agent) ([]Column, error) {
	inDept := map[uuid.UUID]bool{}
	for _, a := range agents {
		if a.Department == dept {
			inDept[a.ID] = true
		}
	}
	var out []Column
	for _, st := range columnOrder {
		f.Status, f.Limit, f.After = st, columnScan+1, nil
		ts, err := d.d.Board.ListTasks(ctx, tenantID, f)
		if err != nil {
			return nil, err
		}
		col := Column{Status: st, Over: len(ts) > columnScan}
		if col.Over {
			ts = ts[:columnScan]
		}
		for _, t := range ts {
			if dept != "" && !inDept[t.AssigneeID] {
				continue
			}
			col.Count++
			if len(col.Tasks) < columnCards {
				col.Tasks = append(col.Tasks, t)
			}
		}
		out = append(out, col)
	}
	return out, nil
}

// departments lists the agents' departments, once each, in order met.
func departments(agents []identity.Agent) []string {
	var out []string
	seen := map[string]bool{}
	for _, a := range agents {
		if a.Department != "" && !seen[a.Department] {
			seen[a.Department] = true
			out = append(out, a.Department)
		}
	}
	return out
}
