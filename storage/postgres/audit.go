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

// AuditLog is the Postgres audit trail. Record hands a row to a dispatcher
// that gathers the rows waiting into one batch, commits it with one
// statement, and answers every caller of the batch once it is durable.
// Normally one commit is in flight: rows that arrive during it wait for it
// to end and go together in the next one (group commit), so a busy endpoint
// pays one commit for many calls and an idle one waits for none. On this
// kind of machine a durable commit costs the database about 100 µs of CPU
// whatever it holds, so batches made this way cost a call several times
// less than small ones committed side by side. Up to writers commits run at
// once only when the one in flight is slow (slowAfter) or the rows waiting
// fill a batch: Postgres slow for a moment, or a batch spending statements
// on finding the rows Postgres refuses, holds up nobody else for long. A
// row Postgres refuses fails only its own caller (see commit). The commits
// use connections of their own, apart from the pool that serves requests
// (Start), so that under load a commit never waits behind request handlers
// for a connection.
type AuditLog struct {
	db        *DB
	log       *slog.Logger
	in        chan *pendingRow
	writers   int
	maxBatch  int
	slowAfter time.Duration

	life    lifecycle.Base
	conns   atomic.Pointer[pgxpool.Pool] // the writers' own (Start)
	commits atomic.Int64

	// closing is held for reading while a row is handed in, and set under
	// the write lock when Stop begins, so that no row is handed in after
	// the dispatcher's last look at in.
	closing sync.RWMutex
	closed  bool
	stop    chan struct{} // closed when Stop begins
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
	l := &AuditLog{db: db, log: log, in: make(chan *pendingRow, 4096), writers: writers, maxBatch: 512,
		slowAfter: 5 * time.Millisecond, stop: make(chan struct{})}
	l.life.OnStop(func() {
		l.closing.Lock()
		l.closed = true
		l.closing.Unlock()
		close(l.stop)
	})
	return l
}

// Start opens the writers' own pool — at most one connection per writer,
// each opened when first needed, with the settings of db's pool and, unless
// those name one, the application name visor-audit — and runs the
// dispatcher and the writers until Stop. It runs once (lifecycle.Base).
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
	batches, done := make(chan []*pendingRow), make(chan struct{}, l.writers)
	for range l.writers {
		l.life.Go(func() {
			for b := range batches {
				l.commit(conns, b)
				done <- struct{}{}
			}
		})
	}
	l.life.Go(func() { l.dispatch(batches, done) })
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
	p := &pendingRow{e: e, done: make(chan error, 1)}
	l.closing.RLock()
	if l.closed {
		l.closing.RUnlock()
		return errAuditStopped
	}
	select {
	case l.in <- p:
	case <-ctx.Done():
		l.closing.RUnlock()
		return ctx.Err()
	}
	l.closing.RUnlock()
	select {
	case err := <-p.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// dispatch gathers rows into batches for the writers: a batch starts at
// once when no commit is in flight, and beside the ones in flight only when
// the newest of them has run for slowAfter or the rows waiting fill a
// batch. It holds at most writers batches' worth of rows; beyond that, in
// fills and Record waits. At Stop it hands over everything handed in,
// waits for the commits, and ends the writers.
func (l *AuditLog) dispatch(batches chan<- []*pendingRow, done <-chan struct{}) {
	var (
		waiting  []*pendingRow
		inflight int
		newest   time.Time // when the newest commit in flight began
		slow     = time.NewTimer(time.Hour)
		stop     = l.stop // nil once stopping
	)
	slow.Stop()
	defer close(batches)
	limit := l.maxBatch * l.writers
	for {
		if len(waiting) > 0 && (inflight == 0 || inflight < l.writers &&
			(stop == nil || len(waiting) >= l.maxBatch || time.Since(newest) >= l.slowAfter)) {
			n := min(len(waiting), l.maxBatch)
			batch := slices.Clone(waiting[:n])
			waiting = append(waiting[:0], waiting[n:]...)
			batches <- batch
			inflight++
			newest = time.Now()
			continue
		}
		if stop == nil && len(waiting) == 0 && inflight == 0 {
			return
		}
		var wake <-chan time.Time
		if len(waiting) > 0 && inflight < l.writers {
			slow.Reset(l.slowAfter - time.Since(newest))
			wake = slow.C
		}
		in := l.in
		if len(waiting) >= limit || stop == nil {
			in = nil
		}
		select {
		case p := <-in:
			waiting = append(waiting, p)
			for len(waiting) < limit {
				select {
				case p := <-l.in:
					waiting = append(waiting, p)
					continue
				default:
				}
				break
			}
		case <-done:
			inflight--
		case <-wake:
		case <-stop:
			// Nothing more is handed in (closed is set): take what was.
			for {
				select {
				case p := <-l.in:
					waiting = append(waiting, p)
					continue
				default:
				}
				break
			}
			stop = nil
		}
		slow.Stop()
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
			e.ID = uuid.New()
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
