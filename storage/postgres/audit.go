package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/validtext"
)

// AuditLog is the Postgres audit trail. Record hands a row in; a writer
// takes every row waiting as one batch, commits it with one statement, and
// answers each caller of the batch once it is durable. Normally one commit
// is in flight: rows that arrive during it wait for it to end, and the
// writer that made it takes them all at once for the next (group commit),
// so a busy endpoint pays one commit for many calls, an idle one waits for
// none, and no goroutine stands between one commit and the next. A durable
// commit costs the database about the same CPU whatever it holds, so
// batches made this way cost a call several times less than small ones
// committed side by side. Up to writers commits run at once only when the
// newest in flight has run for slowAfter or the rows waiting fill a batch:
// Postgres slow for a moment, or a batch spending statements on finding
// the rows Postgres refuses, holds up nobody else for long. A row Postgres
// refuses fails only its own caller (see commit). The commits use
// connections of their own, apart from the pool that serves requests
// (Start), so that under load a commit never waits behind request handlers
// for a connection.
type AuditLog struct {
	db        *DB
	log       *slog.Logger
	writers   int
	maxBatch  int
	slowAfter time.Duration

	life    lifecycle.Base
	conns   atomic.Pointer[pgxpool.Pool] // the writers' own (Start)
	commits atomic.Int64

	room chan struct{} // a slot per row handed in and not yet answered; Record waits for one
	wake chan struct{} // a writer may find a batch to take
	stop chan struct{} // closed when Stop begins
	slow *time.Timer   // wakes a writer once the newest commit has run for slowAfter

	mu       sync.Mutex
	waiting  []*pendingRow
	inflight int       // commits in flight
	newest   time.Time // when the newest of them began
	closed   bool      // Stop began: nothing more is handed in
}

type pendingRow struct {
	e    audit.Entry
	done chan error
}

var (
	_ audit.Recorder = (*AuditLog)(nil)
	_ audit.Store    = (*AuditLog)(nil)
)

// errAuditStopped is returned by Record after Stop.
var errAuditStopped = fault.New(fault.Unavailable, "the audit trail is shutting down")

// NewAuditLog returns an audit log on db that runs at most writers commits
// at once (default 4). Call Start before Record.
func NewAuditLog(db *DB, writers int, log *slog.Logger) *AuditLog {
	if writers <= 0 {
		writers = 4
	}
	l := &AuditLog{db: db, log: log, writers: writers, maxBatch: 512, slowAfter: 5 * time.Millisecond,
		room: make(chan struct{}, 4096), wake: make(chan struct{}, writers), stop: make(chan struct{})}
	l.slow = time.AfterFunc(time.Hour, l.signal)
	l.slow.Stop()
	l.life.OnStop(func() {
		l.mu.Lock()
		l.closed = true
		l.mu.Unlock()
		l.slow.Stop()
		close(l.stop)
	})
	return l
}

// Start opens the writers' own pool — at most one connection per writer,
// each opened when first needed, with the settings of db's pool and, unless
// those name one, the application name visor-audit — and runs the writers
// until Stop. It runs once (lifecycle.Base).
func (l *AuditLog) Start(ctx context.Context) error {
	if _, err := l.life.Begin(ctx); err != nil {
		return err
	}
	cfg := l.db.Pool.Config()
	cfg.MaxConns, cfg.MinConns = int32(l.writers), 0
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "visor-audit"
	}
	conns, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("open the audit writers' connections: %w", err)
	}
	l.conns.Store(conns)
	for range l.writers {
		l.life.Go(func() { l.write(conns) })
	}
	return nil
}

// Stop writes every row already handed in, then stops the writers and
// closes their connections. It is safe to call twice.
func (l *AuditLog) Stop() {
	l.life.Stop()
	if c := l.conns.Load(); c != nil {
		c.Close()
	}
}

// Record returns once e is committed. An error means it was not.
func (l *AuditLog) Record(ctx context.Context, e audit.Entry) error {
	select {
	case l.room <- struct{}{}:
	case <-l.stop:
		return errAuditStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	p := &pendingRow{e: e, done: make(chan error, 1)}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.room
		return errAuditStopped
	}
	l.waiting = append(l.waiting, p)
	ready := l.ready()
	if !ready && len(l.waiting) == 1 {
		l.arm()
	}
	l.mu.Unlock()
	if ready {
		l.signal()
	}
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// signal wakes a writer, if one sleeps, to look for a batch.
func (l *AuditLog) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// ready reports whether a writer that is free should take a batch now: at
// once when no commit is in flight, and beside the ones in flight only when
// the newest has run for slowAfter, the rows waiting fill a batch, or Stop
// began. l.mu is held.
func (l *AuditLog) ready() bool {
	if len(l.waiting) == 0 {
		return false
	}
	if l.inflight == 0 {
		return true
	}
	return l.inflight < l.writers && (l.closed || len(l.waiting) >= l.maxBatch || time.Since(l.newest) >= l.slowAfter)
}

// take returns the next batch if one is ready, counting its commit as in
// flight, and wakes another writer if more is ready. l.mu is held.
func (l *AuditLog) take() []*pendingRow {
	if !l.ready() {
		return nil
	}
	n := min(len(l.waiting), l.maxBatch)
	batch := slices.Clone(l.waiting[:n])
	clear(l.waiting[:n])
	l.waiting = append(l.waiting[:0], l.waiting[n:]...)
	l.inflight++
	l.newest = time.Now()
	if l.ready() {
		l.signal()
	} else {
		l.arm()
	}
	return batch
}

// arm sets the slow timer to wake a writer when the newest commit in
// flight will have run for slowAfter, if rows are waiting and another
// commit may start then. l.mu is held.
func (l *AuditLog) arm() {
	if len(l.waiting) > 0 && l.inflight > 0 && l.inflight < l.writers {
		l.slow.Reset(l.slowAfter - time.Since(l.newest))
	}
}

// write is one writer: it takes a batch, commits it, and goes straight on
// to the next one while rows are waiting; with none, it sleeps until
// Record or the slow timer wakes it. Once Stop began it takes what is
// left, and ends when nothing is.
func (l *AuditLog) write(conns *pgxpool.Pool) {
	for {
		l.mu.Lock()
		batch := l.take()
		closed := l.closed
		l.mu.Unlock()
		if batch == nil {
			if closed {
				return
			}
			select {
			case <-l.wake:
			case <-l.stop:
			}
			continue
		}
		l.commit(conns, batch)
		for range batch {
			<-l.room
		}
		l.mu.Lock()
		l.inflight--
		l.mu.Unlock()
	}
}

// isolateBudget bounds the statements one batch may spend finding the rows
// Postgres rejects, so a flood of rejected rows costs each batch a bounded
// time; rows left unisolated when it runs out fail with the rejected ones.
const isolateBudget = 32

// commit writes batch and answers each of its callers. The whole batch is
// one statement. When Postgres rejects a row of it (a data or constraint
// error: the statement fails as a whole), each tenant's rows are retried as
// their own statement, so a tenant whose rows are refused delays every other
// tenant by one statement, and only that tenant's rows are bisected to find
// the refused ones. Any other error (Postgres down or too slow) fails the
// whole batch at once: retrying it row by row would only wait longer.
func (l *AuditLog) commit(conns *pgxpool.Pool, batch []*pendingRow) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := l.insert(ctx, conns, batch)
	if err == nil || !rowRejected(err) {
		l.answer(batch, err)
		return
	}
	budget := isolateBudget
	groups := byTenant(batch)
	for _, g := range groups {
		if len(groups) > 1 {
			budget--
			if err = l.insert(ctx, conns, g); err == nil || !rowRejected(err) {
				l.answer(g, err)
				continue
			}
		}
		l.isolate(ctx, conns, g, err, &budget)
	}
}

// isolate bisects rows, whose insert Postgres rejected with cause, until
// each refused row stands alone; the others are committed.
func (l *AuditLog) isolate(ctx context.Context, conns *pgxpool.Pool, rows []*pendingRow, cause error, budget *int) {
	if len(rows) == 1 || *budget <= 0 {
		l.log.Error("audit rows refused by Postgres", "rows", len(rows), "tenant", rows[0].e.TenantID, "tool", rows[0].e.Tool, "err", cause)
		l.answer(rows, fault.Newf(fault.Internal, cause, "the audit row was refused"))
		return
	}
	half := len(rows) / 2
	for _, part := range [][]*pendingRow{rows[:half], rows[half:]} {
		*budget--
		if err := l.insert(ctx, conns, part); err != nil && rowRejected(err) {
			l.isolate(ctx, conns, part, err, budget)
		} else {
			l.answer(part, err)
		}
	}
}

// rowRejected reports whether err is Postgres refusing a row's values
// (class 21 cardinality, 22 data exception, 23 integrity constraint), as
// opposed to Postgres being unreachable, slow or failing as a whole.
func rowRejected(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || len(pe.Code) < 2 {
		return false
	}
	switch pe.Code[:2] {
	case "21", "22", "23":
		return true
	}
	return false
}

func byTenant(batch []*pendingRow) [][]*pendingRow {
	at := map[uuid.UUID]int{}
	var groups [][]*pendingRow
	for _, p := range batch {
		i, ok := at[p.e.TenantID]
		if !ok {
			i = len(groups)
			at[p.e.TenantID] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

func (l *AuditLog) answer(rows []*pendingRow, err error) {
	if err != nil && !fault.Is(err, fault.Internal) {
		l.log.Error("audit commit failed", "rows", len(rows), "err", err)
		err = fault.Newf(fault.Unavailable, err, "the audit trail is unavailable")
	}
	for _, p := range rows {
		p.done <- err
	}
}

// insertAudit writes a batch as one statement: its plan is prepared once
// per connection (pgx's statement cache), so a batch costs one round trip
// and one commit. COPY needs two round trips, which cost more than they
// save at the endpoint's batch sizes (a few rows). A row whose id is
// already there completes it when it is pending (its outcome columns only,
// which the append-only trigger allows once) and is ignored otherwise.
const insertAudit = `INSERT INTO audit_events (tenant_id, id, at, principal_kind, principal_id, tool, args_digest,
	outcome, code, event_type, message, latency_us, source, action, object, change)
SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::text[], $5::text[], $6::text[], $7::text[],
	$8::text[], $9::bigint[], $10::text[], $11::text[], $12::bigint[], $13::text[], $14::text[], $15::text[], $16::text[])
ON CONFLICT (tenant_id, id) DO UPDATE SET outcome = excluded.outcome, code = excluded.code,
	event_type = excluded.event_type, message = excluded.message, latency_us = excluded.latency_us
	WHERE audit_events.outcome = 'pending'`

// insert writes rows in one statement. Text is made storable first: a NUL
// or invalid UTF-8 that got past the edges is kept as U+FFFD rather than
// failing the statement.
func (l *AuditLog) insert(ctx context.Context, conns *pgxpool.Pool, batch []*pendingRow) error {
	n := len(batch)
	var (
		// pgtype.UUID is encoded as its 16 bytes; uuid.UUID would go
		// through its text form.
		tenants, ids                                            = make([]pgtype.UUID, n), make([]pgtype.UUID, n)
		at                                                      = make([]time.Time, n)
		kinds, principals, tools, digests, outcomes, events, ms = make([]string, n), make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		codes, latencies                  = make([]int64, n), make([]int64, n)
		sources, actions, objects, change = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	)
	txt := validtext.Storable
	for i, p := range batch {
		e := p.e
		if e.ID == uuid.Nil {
			e.ID = audit.NewID()
		}
		if e.Source == "" {
			e.Source = audit.SourceMCP
		}
		tenants[i], ids[i] = pgtype.UUID{Bytes: e.TenantID, Valid: true}, pgtype.UUID{Bytes: e.ID, Valid: true}
		at[i], kinds[i], principals[i], tools[i], digests[i] = e.At, txt(e.PrincipalKind),
			txt(e.PrincipalID), txt(e.Tool), txt(e.ArgsDigest)
		outcomes[i], codes[i], events[i], ms[i], latencies[i] = txt(e.Outcome), e.Code, txt(e.Event), txt(e.Message), e.Latency.Microseconds()
		sources[i], actions[i], objects[i], change[i] = txt(e.Source), txt(e.Action), txt(e.Object), txt(e.Change)
	}
	_, err := conns.Exec(ctx, insertAudit, tenants, ids, at, kinds, principals, tools, digests, outcomes, codes, events, ms, latencies,
		sources, actions, objects, change)
	if err != nil {
		return err
	}
	l.commits.Add(1)
	return nil
}

// List returns the tenant's audit rows matching f, newest first.
func (l *AuditLog) List(ctx context.Context, tenantID uuid.UUID, f audit.Filter) (_ []audit.Entry, err error) {
	defer fault.Wrap(&err, "list audit events")
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	q := `SELECT tenant_id, id, at, principal_kind, principal_id, tool, args_digest, outcome, code, event_type, message, latency_us,
		source, action, object, change FROM audit_events WHERE tenant_id = $1`
	args := []any{tenantID}
	add := func(cond string, v any) {
		args = append(args, v)
		q += fmt.Sprintf(" AND "+cond, len(args))
	}
	for _, c := range []struct {
		col, v string
	}{{"principal_kind", f.PrincipalKind}, {"principal_id", f.PrincipalID}, {"tool", f.Tool}, {"outcome", f.Outcome}, {"event_type", f.Event},
		{"source", f.Source}, {"action", f.Action}, {"object", f.Object}} {
		if c.v != "" {
			add(c.col+" = $%d", c.v)
		}
	}
	if !f.Since.IsZero() {
		add("at >= $%d", f.Since)
	}
	if !f.Until.IsZero() {
		add("at < $%d", f.Until)
	}
	if f.Before != uuid.Nil {
		add("(at, id) < (SELECT at, id FROM audit_events WHERE tenant_id = $1 AND id = $%d)", f.Before)
	}
	args = append(args, f.Limit)
	q += fmt.Sprintf(" ORDER BY at DESC, id DESC LIMIT $%d", len(args))
	rows, err := l.db.Pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (audit.Entry, error) {
		var e audit.Entry
		var us int64
		err := r.Scan(&e.TenantID, &e.ID, &e.At, &e.PrincipalKind, &e.PrincipalID, &e.Tool, &e.ArgsDigest,
			&e.Outcome, &e.Code, &e.Event, &e.Message, &us, &e.Source, &e.Action, &e.Object, &e.Change)
		e.Latency = time.Duration(us) * time.Microsecond
		return e, err
	})
}

// Commits returns how many commits the writers made, for tests and metrics:
// under concurrency it is far below the number of rows.
func (l *AuditLog) Commits() int64 { return l.commits.Load() }
