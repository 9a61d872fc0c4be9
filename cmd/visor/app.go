package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"

	"github.com/visorhq/visor/auth/oauth"
	dockerws "github.com/visorhq/visor/docker/workspace"
	"github.com/visorhq/visor/services/agents"
	"github.com/visorhq/visor/services/board"
	"github.com/visorhq/visor/services/changes"
	"github.com/visorhq/visor/services/computer"
	"github.com/visorhq/visor/services/dbsources"
	"github.com/visorhq/visor/services/grants"
	"github.com/visorhq/visor/services/identity"
	"github.com/visorhq/visor/services/knowledge"
	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/live"
	"github.com/visorhq/visor/services/responsibilities"
	"github.com/visorhq/visor/services/rounds"
	"github.com/visorhq/visor/services/tools"
	"github.com/visorhq/visor/services/upstreams"
	"github.com/visorhq/visor/services/workspace"
	"github.com/visorhq/visor/storage/postgres"
	"github.com/visorhq/visor/storage/redisx"
	"github.com/visorhq/visor/worker"
)

// app holds the shared dependencies of the long-running commands, built
// once and in order by openApp: connections, then stores, then the domain
// services. Each command then adds its background services to life (which
// stops them in reverse order on Close) and its edges.
type app struct {
	cfg Config
	log *slog.Logger
	tp  trace.TracerProvider // nil when tracing is off
	db  *postgres.DB
	rdb *redisx.Client // nil for commands that do not need Redis
	// limitClock, when set (tests), is the rate limits' clock.
	limitClock func() time.Time
	stores     stores
	ids        *identity.Service
	// grants is the scoped-grants service (capability_request, approvals).
	grants *grants.Service
	// board is the task board (tasks, routines, reminders, hand-offs).
	board *board.Service
	// responsibilities runs the continuous responsibilities of AI employees.
	responsibilities *responsibilities.Service
	// computer is computer use: browser sessions and workspaces.
	computer *computer.Service
	// dbSources are the tenants' database sources and the db_* tools.
	dbSources *dbsources.Service
	// upstreams is the tenants' upstream MCP servers and the mcp_* tools.
	upstreams *upstreams.Service
	// knowledge is memories, wikis, hand-offs and beliefs.
	knowledge *knowledge.Service
	// workspace is the employees' workspaces and their tools.
	workspace *workspace.Service
	// wsHost is this worker's workspace manager when it runs workspaces:
	// its computer worker mounts their trees into browser sessions.
	wsHost *dockerws.Manager
	// rounds delivers wake-ups to runtimes (the workers' claimers take them
	// from their table); jobs inserts River jobs (responsibilities'); bell
	// wakes this replica's long-polls.
	rounds *rounds.Service
	jobs   *river.Client[pgx.Tx]
	bell   *rounds.Bell
	// life holds what the command started and opened; Close stops it all,
	// newest first.
	life lifecycle.Group
	// local drops this replica's caches for the changes it commits itself.
	local localChanges
	// streams lists who holds a live stream now, on every replica (set by
	// startLive).
	streams live.Directory
	// oauth is the authorization server (set by mountOAuth).
	oauth *oauth.Server
}

// stores are the Postgres stores, each built once per process.
type stores struct {
	identity     *postgres.IdentityStore
	credentials  *postgres.CredentialStore
	grants       *postgres.GrantStore
	reservations *postgres.ReservationStore
	// computer holds browser sessions and workspaces.
	computer *postgres.ComputerStore
	// sandboxRuns is the log of script runs the dashboard lists.
	sandboxRuns *postgres.SandboxRunStore
	// rounds holds rounds and wake-ups (built with the job queue, by
	// newRounds).
	rounds *postgres.RoundsStore
	// workspace holds workspaces, tracked tasks, Skills and artifacts.
	workspace *postgres.WorkspaceStore
	// dbSources holds the tenants' database sources (built by
	// newDBSources).
	dbSources *postgres.DBSourceStore
	// upstreams holds the tenants' upstream MCP servers (built by
	// newUpstreams).
	upstreams *postgres.UpstreamStore
	// audit is the audit trail; its group-commit writers run as a service
	// (started by the commands that record).
	audit *postgres.AuditLog
}

func newStores(db *postgres.DB, log *slog.Logger) stores {
	return stores{
		identity: postgres.NewIdentityStore(db), credentials: postgres.NewCredentialStore(db),
		grants: postgres.NewGrantStore(db), reservations: postgres.NewReservationStore(db),
		computer: postgres.NewComputerStore(db), sandboxRuns: postgres.NewSandboxRunStore(db), workspace: postgres.NewWorkspaceStore(db),
		audit: postgres.NewAuditLog(db, 4, log.With("area", "audit")),
	}
}

type appNeeds struct {
	redis       bool // open Redis
	schemaCheck bool // refuse a schema that is behind
	announce    bool // publish committed changes on Redis when it is reachable
}

// openApp connects to what the command needs. Every failure is one line
// that says what is wrong and which variable to set.
func openApp(ctx context.Context, cfg Config, log *slog.Logger, tp trace.TracerProvider, need appNeeds) (_ *app, err error) {
	a := &app{cfg: cfg, log: log, tp: tp}
	defer func() {
		if err != nil {
			a.Close()
		}
	}()
	if a.db, err = openPostgres(ctx, cfg, tp); err != nil {
		return nil, err
	}
	a.life.Defer(a.db.Close)
	if need.schemaCheck {
		if err := a.db.CheckCurrent(ctx); err != nil {
			return nil, err
		}
	}
	if need.redis {
		if a.rdb, err = openRedis(ctx, cfg, tp); err != nil {
			return nil, err
		}
		a.life.Defer(func() { _ = a.rdb.Close() })
	} else if need.announce {
		// Best effort: without Redis the change still commits, and replicas
		// drop their cached credentials within auth.CredentialCacheTTL.
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		a.rdb, err = openRedis(rctx, cfg, tp)
		cancel()
		if err != nil {
			log.Warn("cannot announce changes to running replicas; they notice within seconds", "err", err)
			a.rdb, err = nil, nil
		} else {
			a.life.Defer(func() { _ = a.rdb.Close() })
		}
	}
	a.stores = newStores(a.db, log)
	a.ids = identity.NewService(a.stores.identity, a.publisher(), log)
	a.grants = grants.NewService(a.stores.grants, a.stores.identity, a.publisher(), tools.Match, log)
	if err := a.newRounds(); err != nil {
		return nil, err
	}
	a.board = a.newBoard()
	rs := postgres.NewResponsibilityStore(a.db)
	rs.SetJobs(worker.ResponsibilityJobs{Client: a.jobs})
	a.responsibilities = responsibilities.NewService(rs, agents.NewDelegation(a.stores.identity))
	a.responsibilities.SetQuestions(rs)
	a.responsibilities.SetSchedules(rs)
	a.responsibilities.SetNotices(rs)
	a.responsibilities.SetNotifier(a.responsibilityNotifier())
	a.responsibilities.SetRounds(a.rounds)
	a.board.SetRuns(a.responsibilities)
	a.computer = a.newComputer()
	a.dbSources = a.newDBSources()
	a.ids.SetSourceNames(a.dbSources)
	a.upstreams = a.newUpstreams()
	a.knowledge = knowledge.NewService(knowledge.Config{Store: postgres.NewKnowledgeStore(a.db), Directory: a.stores.identity,
		Relations: agents.NewDelegation(a.stores.identity), Runs: a.responsibilities, HandoffMaxBytes: cfg.HandoffMaxBytes})
	a.rounds.SetNotes(a.knowledge)
	a.workspace = a.newWorkspace()
	if a.rdb != nil {
		a.computer.SetTrees(sessionTrees{a.workspace})
	}
	return a, nil
}

// start starts a background service for the rest of the command; Close
// stops it, in the reverse order of starting.
func (a *app) start(ctx context.Context, s lifecycle.Service) error { return a.life.Start(ctx, s) }

// publisher is where committed policy changes go: the tenant's Redis
// channel, or nowhere for commands without Redis (replicas then reconcile
// against the policy version).
func (a *app) publisher() changes.Publisher {
	if a.rdb == nil {
		return &a.local
	}
	return changes.Multi{&a.local, redisx.NewBus(a.rdb.Client)}
}

// localChanges hands the changes this process commits to its own caches
// (resolved credentials, policy rows) before they go to Redis, so the
// replica that revokes a credential refuses it on its very next request.
// Other replicas hear the change from Redis (startLive).
type localChanges struct {
	mu     sync.Mutex
	forget []func(tenantID, agentID uuid.UUID)
}

// hear adds f to what is called for every change committed here.
func (l *localChanges) hear(f func(tenantID, agentID uuid.UUID)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.forget = append(l.forget, f)
}

// Publish calls every forget function for e.
func (l *localChanges) Publish(_ context.Context, e changes.Event) error {
	l.mu.Lock()
	fs := l.forget
	l.mu.Unlock()
	for _, f := range fs {
		f(e.TenantID, e.AgentID)
	}
	return nil
}

// Close stops every service the command started and closes what openApp
// opened, newest first. It is safe to call twice.
func (a *app) Close() { a.life.Stop() }

// connectTimeout bounds each attempt to reach Postgres when the URL sets no
// connect_timeout.
const connectTimeout = 10 * time.Second

func openPostgres(ctx context.Context, cfg Config, tp trace.TracerProvider) (*postgres.DB, error) {
	db, err := postgres.Open(ctx, cfg.DatabaseURL, func(c *pgxpool.Config) {
		if cfg.dbPool > 0 {
			c.MaxConns = cfg.dbPool
		}
		if c.ConnConfig.ConnectTimeout == 0 { // a silent host should not hang start-up
			c.ConnConfig.ConnectTimeout = connectTimeout
		}
		if tp != nil {
			c.ConnConfig.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(tp))
		}
	})
	if err == nil {
		return db, nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "3D000" {
		return nil, fmt.Errorf("cannot use Postgres: %s; create it (createdb), run `visor dev` which creates it, or set VISOR_DATABASE_URL", pe.Message)
	}
	return nil, fmt.Errorf("cannot use Postgres (%s); start Postgres or set VISOR_DATABASE_URL", oneLine(err))
}

func openRedis(ctx context.Context, cfg Config, tp trace.TracerProvider) (*redisx.Client, error) {
	rdb, err := redisx.Open(ctx, cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("cannot use Redis (%s); start Redis or set VISOR_REDIS_URL", oneLine(err))
	}
	if tp != nil {
		if err := redisotel.InstrumentTracing(rdb.Client, redisotel.WithTracerProvider(tp)); err != nil {
			_ = rdb.Close()
			return nil, fmt.Errorf("instrument Redis: %w", err)
		}
	}
	return rdb, nil
}

// newLogger returns the process logger on w.
func newLogger(cfg Config, w interface{ Write([]byte) (int, error) }) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// oneLine folds a driver's multi-line error (pgx lists every address it
// tried) into one line, dropping repeats.
func oneLine(err error) string {
	var parts []string
	seen := map[string]bool{}
	for _, l := range strings.Split(err.Error(), "\n") {
		l = strings.TrimRight(strings.TrimSpace(l), ":")
		if l != "" && !seen[l] {
			seen[l] = true
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, ": ")
}
