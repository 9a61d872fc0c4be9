package redisx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/lifecycle"
	"github.com/visorhq/visor/services/plane"
)

// PlaneWorkerOptions configure the working side of the plane.
type PlaneWorkerOptions struct {
	// ID names this worker; requests for it alone use it. Use a stable
	// name (the host name) so a restarted worker's janitor finds what its
	// previous life left.
	ID string
	// Pools are the pools whose requests this worker takes.
	Pools []string
	// Capacity is how many jobs it holds at once (default 4). Jobs beyond
	// it stay queued in Redis, where the pool takes turns between tenants
	// and another worker may take them.
	Capacity int
	// Prefix prefixes keys and channels ("" means DefaultPlanePrefix).
	Prefix string
	// PoolRoom, when set, is asked before each take from the pools, with
	// the number of pool jobs this worker is running: false leaves the
	// pools' jobs for other workers (a worker whose resource is full stops
	// taking new work, while its own queue is still served). It is asked
	// again at every wake-up, every poll and whenever a job ends, so the
	// worker takes pool work again once it has room. It must be quick.
	PoolRoom func(running int) bool
}

// PlaneWorker takes jobs from its pools and its own queue and runs them
// with the registered handlers. It is a lifecycle.Service: Stop ends the
// intake, cancels the running jobs (each answers its caller) and waits
// for them.
type PlaneWorker struct {
	c        *Client
	opts     PlaneWorkerOptions
	keys     planeKeys
	log      *slog.Logger
	handlers map[string]plane.Handler
	slots    chan struct{}
	wake     chan struct{}
	life     lifecycle.Base
	pooled   atomic.Int64 // pool jobs taken and not yet ended

	mu      sync.Mutex
	running map[uuid.UUID]context.CancelFunc
}

var _ lifecycle.Service = (*PlaneWorker)(nil)

// NewPlaneWorker returns a worker on c. Register handlers before Start.
func NewPlaneWorker(c *Client, opts PlaneWorkerOptions, log *slog.Logger) *PlaneWorker {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPlanePrefix
	}
	if opts.Capacity < 1 {
		opts.Capacity = 4
	}
	return &PlaneWorker{c: c, opts: opts, keys: planeKeys(opts.Prefix), log: log, handlers: map[string]plane.Handler{},
		slots: make(chan struct{}, opts.Capacity), wake: make(chan struct{}, 1), running: map[uuid.UUID]context.CancelFunc{}}
}

// Handle registers the handler of a job kind. Call it before Start.
func (w *PlaneWorker) Handle(kind string, h plane.Handler) { w.handlers[kind] = h }

// ID returns the worker's id.
func (w *PlaneWorker) ID() string { return w.opts.ID }

// Start announces the worker, subscribes to its wake-ups and cancels, and
// starts taking jobs. It fails when Redis cannot be reached.
func (w *PlaneWorker) Start(ctx context.Context) error {
	if w.opts.ID == "" {
		return errors.New("worker plane: a worker needs an id")
	}
	rctx, err := w.life.Begin(ctx)
	if err != nil {
		return err
	}
	if err := w.beat(ctx); err != nil {
		w.life.Stop()
		return fmt.Errorf("worker plane: announce worker %s: %w", w.opts.ID, err)
	}
	channels := []string{w.keys.control(w.opts.ID), w.keys.wakeWorker(w.opts.ID)}
	for _, p := range w.opts.Pools {
		channels = append(channels, w.keys.wakePool(p))
	}
	sub := w.c.Subscribe(ctx, channels...)
	if _, err := sub.Receive(ctx); err != nil {
		_ = sub.Close()
		w.life.Stop()
		return fmt.Errorf("worker plane: subscribe: %w", err)
	}
	w.life.OnStop(func() { _ = sub.Close() })
	w.life.Go(func() { w.listen(sub.Channel()) })
	w.life.Go(func() { w.heartbeat(rctx) })
	w.life.Go(func() { w.intake(rctx) })
	return nil
}

// Stop ends the intake and the running jobs and waits for them, then takes
// the worker out of its pools. It is safe to call twice.
func (w *PlaneWorker) Stop() {
	w.life.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = w.c.Del(ctx, w.keys.alive(w.opts.ID)).Err()
	for _, p := range w.opts.Pools {
		_ = w.c.ZRem(ctx, w.keys.alivePool(p), w.opts.ID).Err()
	}
}

// beat renews the worker's heartbeat key and its entry in each pool.
func (w *PlaneWorker) beat(ctx context.Context) error {
	until := time.Now().Add(HeartbeatTTL).UnixMilli()
	pipe := w.c.TxPipeline()
	pipe.Set(ctx, w.keys.alive(w.opts.ID), w.opts.ID, HeartbeatTTL)
	for _, p := range w.opts.Pools {
		pipe.ZAdd(ctx, w.keys.alivePool(p), redis.Z{Score: float64(until), Member: w.opts.ID})
		pipe.ZRemRangeByScore(ctx, w.keys.alivePool(p), "-inf", fmt.Sprint(time.Now().UnixMilli()))
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (w *PlaneWorker) heartbeat(ctx context.Context) {
	t := time.NewTicker(Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := w.beat(ctx); err != nil && ctx.Err() == nil {
				w.log.Warn("worker plane: heartbeat", "worker", w.opts.ID, "err", err)
			}
		}
	}
}

// listen turns control messages into cancels and wake-ups into a look at
// the queues.
func (w *PlaneWorker) listen(ch <-chan *redis.Message) {
	for m := range ch {
		if m.Channel != w.keys.control(w.opts.ID) {
			select {
			case w.wake <- struct{}{}:
			default:
			}
			continue
		}
		if id, err := uuid.Parse(m.Payload); err == nil {
			w.cancel(id)
		}
	}
}

func (w *PlaneWorker) cancel(id uuid.UUID) {
	w.mu.Lock()
	stop := w.running[id]
	w.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// intake takes a job whenever a slot is free.
func (w *PlaneWorker) intake(ctx context.Context) {
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		for {
			raw, pooled, err := w.next(ctx)
			if err != nil && ctx.Err() == nil {
				w.log.Warn("worker plane: take a job", "worker", w.opts.ID, "err", err)
			}
			if raw != "" {
				w.life.Go(func() { defer w.ended(pooled); w.run(ctx, raw) })
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			case <-poll.C:
			}
		}
	}
}

// ended frees a job's slot and, for a pool job, its count; a worker that
// had no room for pool work looks at the pools again.
func (w *PlaneWorker) ended(pooled bool) {
	if pooled {
		w.pooled.Add(-1)
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	<-w.slots
}

// next takes one job: this worker's own first, then each pool's when it
// has room for pool work. pooled reports a job taken from a pool, counted
// until ended.
func (w *PlaneWorker) next(ctx context.Context) (raw string, pooled bool, err error) {
	raw, err = w.c.LPop(ctx, w.keys.workerQueue(w.opts.ID)).Result()
	if err == nil {
		return raw, false, nil
	}
	if !errors.Is(err, redis.Nil) {
		return "", false, err
	}
	// Only the intake takes, so the count cannot grow between the look
	// and the take.
	if w.opts.PoolRoom != nil && !w.opts.PoolRoom(int(w.pooled.Load())) {
		return "", false, nil
	}
	for _, p := range w.opts.Pools {
		raw, err := take.Run(ctx, w.c, []string{w.keys.turns(p), w.keys.seq(p)}, w.keys.tenantQueuePrefix(p)).Text()
		if errors.Is(err, redis.Nil) || (err == nil && raw == "") {
			continue
		}
		if err != nil {
			return "", false, err
		}
		w.pooled.Add(1)
		return raw, true, nil
	}
	return "", false, nil
}

// run runs one taken job and sends its answer.
func (w *PlaneWorker) run(ctx context.Context, raw string) {
	var env envelope
	if err := json.Unmarshal([]byte(raw), &env); err != nil {
		w.log.Warn("worker plane: undecodable job dropped", "worker", w.opts.ID, "err", err)
		return
	}
	if time.Now().After(env.Deadline) {
		return // its caller has stopped waiting
	}
	ctx, cancel := context.WithDeadline(ctx, env.Deadline.Add(time.Minute))
	defer cancel()
	w.mu.Lock()
	w.running[env.ID] = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.running, env.ID)
		w.mu.Unlock()
	}()
	// A cancel sent while the job was being taken left this key.
	if n, err := w.c.Exists(ctx, w.keys.cancelled(env.ID)).Result(); err == nil && n == 1 {
		return
	}
	w.send(ctx, env.ID, message{Type: "taken", Worker: w.opts.ID})
	answer, err := w.handle(ctx, env)
	reply := message{Type: "done", Answer: answer}
	if err != nil {
		reply.Code, reply.Message = fault.CodeOf(err), fault.Message(err)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			reply.Code, reply.Message = fault.Unavailable, "the work was cancelled on its worker"
		}
		if reply.Code == fault.Internal {
			w.log.Error("worker plane: job failed", "worker", w.opts.ID, "kind", env.Kind, "job", env.ID, "err", err)
		}
	}
	if len(reply.Answer) > plane.MaxPayload {
		reply = message{Type: "done", Code: fault.Internal, Message: "the answer was too large to send"}
	}
	w.send(ctx, env.ID, reply)
}

func (w *PlaneWorker) handle(ctx context.Context, env envelope) (json.RawMessage, error) {
	h := w.handlers[env.Kind]
	if h == nil {
		return nil, fault.New(fault.Unavailable, "worker %s cannot run %q work", w.opts.ID, env.Kind)
	}
	return h(ctx, plane.Job{ID: env.ID, Kind: env.Kind, Tenant: env.Tenant, Payload: env.Payload, Enqueued: env.Enqueued, Worker: w.opts.ID,
		Report: func(p plane.Progress) { w.send(ctx, env.ID, message{Type: "progress", Progress: &p}) }})
}

// send publishes a reply message, after the job's context may have ended.
func (w *PlaneWorker) send(ctx context.Context, job uuid.UUID, m message) {
	raw, err := json.Marshal(m)
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := w.c.Publish(ctx, w.keys.reply(job), raw).Err(); err != nil {
		w.log.Warn("worker plane: reply", "worker", w.opts.ID, "job", job, "err", err)
	}
}
