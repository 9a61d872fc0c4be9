package postgres

import (
	"time"

	"github.com/visorhq/visor/services/audit"
)

// CommitBatch commits entries as one writer batch and returns each
// caller's answer, so a test can choose what shares a batch.
func (l *AuditLog) CommitBatch(entries []audit.Entry) []error {
	rows := make([]*pendingRow, len(entries))
	for i, e := range entries {
		rows[i] = &pendingRow{e: e, done: make(chan error, 1)}
	}
	conns := l.conns.Load() // the writers' own, once started
	if conns == nil {
		conns = l.db.Pool
	}
	l.commit(conns, rows)
	errs := make([]error, len(rows))
	for i, p := range rows {
		errs[i] = <-p.done
	}
	return errs
}

// SetSlowAfter sets how long a commit runs before another may start beside
// it. Call it before Start.
func (l *AuditLog) SetSlowAfter(d time.Duration) { l.slowAfter = d }

// Waiting is how many rows wait for a writer to take them.
func (l *AuditLog) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiting)
}

// RecordOutcome is the statement Record runs for each outcome.
const RecordOutcome = recordOutcome

// ClaimDue is the statement ClaimDue runs.
const ClaimDue = claimDue
