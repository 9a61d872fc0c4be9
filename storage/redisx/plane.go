package redisx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/visorhq/visor/services/fault"
	"github.com/visorhq/visor/services/plane"
)

// The worker plane on Redis. Queues live in Redis lists, one per tenant and
// pool, with a sorted set that takes turns between the pool's tenants;
// a request for one worker goes to that worker's own list. A caller
// subscribes to its job's reply channel before queuing it; the worker
// that takes the job announces itself there, then sends progress and the
// answer. Cancels go to the worker's control channel, and a cancel key
// covers a job that is being taken at that moment. Workers keep a
// heartbeat key alive; a caller whose worker's key expires gets
// plane.ErrWorkerLost.
//
// Redis is not the truth here, and nothing durable depends on it: a call
// is interactive, and when Redis or a worker is lost mid-call the caller
// gets an error and the worker's janitor removes what the job left.

// Timings of the plane. A worker renews its heartbeat every Heartbeat and
// the key lives for HeartbeatTTL, so a dead worker is noticed within
// about HeartbeatTTL plus one check.
const (
	Heartbeat    = time.Second
	HeartbeatTTL = 3 * time.Second
	pollEvery    = 250 * time.Millisecond // a worker's look at its queues when no wake-up came
	cancelTTL    = 15 * time.Minute
)

// planeKeys names the keys and channels under one prefix.
type planeKeys string

func (p planeKeys) turns(pool string) string { return string(p) + "pool:" + pool + ":turns" }
func (p planeKeys) seq(pool string) string   { return string(p) + "pool:" + pool + ":seq" }
func (p planeKeys) tenantQueuePrefix(pool string) string {
	return string(p) + "pool:" + pool + ":t:"
}
func (p planeKeys) alivePool(pool string) string { return string(p) + "pool:" + pool + ":alive" }
func (p planeKeys) wakePool(pool string) string  { return string(p) + "pool:" + pool + ":wake" }
func (p planeKeys) workerQueue(id string) string { return string(p) + "worker:" + id + ":q" }
func (p planeKeys) wakeWorker(id string) string  { return string(p) + "worker:" + id + ":wake" }
func (p planeKeys) alive(id string) string       { return string(p) + "worker:" + id + ":alive" }
func (p planeKeys) control(id string) string     { return string(p) + "worker:" + id + ":ctl" }
func (p planeKeys) reply(job uuid.UUID) string   { return string(p) + "job:" + job.String() + ":reply" }
func (p planeKeys) cancelled(job uuid.UUID) string {
	return string(p) + "job:" + job.String() + ":cancel"
}

// DefaultPlanePrefix prefixes every key and channel of the plane.
const DefaultPlanePrefix = "visor:plane:"

// envelope is a queued job.
type envelope struct {
	ID       uuid.UUID       `json:"id"`
	Kind     string          `json:"kind"`
	Tenant   uuid.UUID       `json:"tenant"`
	Payload  json.RawMessage `json:"payload"`
	Enqueued time.Time       `json:"enqueued"`
	Deadline time.Time       `json:"deadline"` // past it, no worker starts the job
}

// message is one message on a job's reply channel.
type message struct {
	Type     string          `json:"type"` // taken, progress, done
	Worker   string          `json:"worker,omitempty"`
	Progress *plane.Progress `json:"progress,omitempty"`
	Answer   json.RawMessage `json:"answer,omitempty"`
	Code     fault.Code      `json:"code,omitempty"`
	Message  string          `json:"message,omitempty"`
}

// enqueue adds a job to its tenant's list and gives a tenant new to the
// pool the current turn.
var enqueue = redis.NewScript(`
redis.call('RPUSH', KEYS[3], ARGV[2])
local s = redis.call('GET', KEYS[2]) or '0'
redis.call('ZADD', KEYS[1], 'NX', s, ARGV[1])
return 1`)

// take pops the next job of the tenant whose turn it is and sends that
// tenant to the back of the turns (or out, when it has nothing left).
var take = redis.NewScript(`
local t = redis.call('ZRANGE', KEYS[1], 0, 0)
if #t == 0 then return false end
local key = ARGV[1] .. t[1]
local job = redis.call('LPOP', key)
local s = redis.call('INCR', KEYS[2])
if redis.call('LLEN', key) == 0 then redis.call('ZREM', KEYS[1], t[1]) else redis.call('ZADD', KEYS[1], s, t[1]) end
if not job then return '' end
return job`)

// withdraw removes a queued job that its caller gave up on; it returns 1
// when the job was still queued.
var withdraw = redis.NewScript(`
local n = redis.call('LREM', KEYS[2], 1, ARGV[2])
if KEYS[1] ~= '' and redis.call('LLEN', KEYS[2]) == 0 then redis.call('ZREM', KEYS[1], ARGV[1]) end
return n`)

// Plane is the calling side of the worker plane. It is safe for
// concurrent use.
type Plane struct {
	c    *Client
	keys planeKeys
	log  *slog.Logger
}

var _ plane.Caller = (*Plane)(nil)

// NewPlane returns the calling side on c; prefix "" means
// DefaultPlanePrefix.
func NewPlane(c *Client, prefix string, log *slog.Logger) *Plane {
	if prefix == "" {
		prefix = DefaultPlanePrefix
	}
	return &Plane{c: c, keys: planeKeys(prefix), log: log}
}

// Call implements plane.Caller.
func (p *Plane) Call(ctx context.Context, r plane.Request, onProgress func(plane.Progress)) (json.RawMessage, error) {
	if err := validRequest(r); err != nil {
		return nil, err
	}
	if ok, err := p.anyAlive(ctx, r); err != nil {
		return nil, err
	} else if !ok {
		return nil, plane.ErrNoWorker
	}
	maxWait := r.MaxWait
	if maxWait <= 0 {
		maxWait = plane.DefaultMaxWait
	}
	env := envelope{ID: uuid.New(), Kind: r.Kind, Tenant: r.Tenant, Payload: r.Payload, Enqueued: time.Now(), Deadline: time.Now().Add(maxWait)}
	if d, ok := ctx.Deadline(); ok && d.Before(env.Deadline) {
		env.Deadline = d
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("encode job: %w", err)
	}
	sub := p.c.Subscribe(ctx, p.keys.reply(env.ID))
	defer func() { _ = sub.Close() }()
	if _, err := sub.Receive(ctx); err != nil { // the subscription is live before the job is queued
		return nil, p.unreachable(ctx, err)
	}
	if err := p.queue(ctx, r, env.Tenant, raw); err != nil {
		return nil, p.unreachable(ctx, err)
	}
	w := &waitCall{p: p, r: r, env: env, raw: raw, onProgress: onProgress, maxWait: time.NewTimer(time.Until(env.Deadline)), replies: sub.Channel()}
	defer w.maxWait.Stop()
	return w.wait(ctx)
}

func validRequest(r plane.Request) error {
	switch {
	case r.Kind == "":
		return fault.New(fault.Invalid, "a worker request needs a kind")
	case r.Pool == "" && r.Worker == "":
		return fault.New(fault.Invalid, "a worker request needs a pool or a worker")
	case len(r.Payload) > plane.MaxPayload:
		return fault.New(fault.TooLarge, "the request is larger than %d bytes", plane.MaxPayload)
	}
	return nil
}

// anyAlive reports whether a worker that could take r has a live heartbeat.
func (p *Plane) anyAlive(ctx context.Context, r plane.Request) (bool, error) {
	if r.Worker != "" {
		n, err := p.c.Exists(ctx, p.keys.alive(r.Worker)).Result()
		if err != nil {
			return false, p.unreachable(ctx, err)
		}
		return n == 1, nil
	}
	n, err := p.c.ZCount(ctx, p.keys.alivePool(r.Pool), fmt.Sprint(time.Now().UnixMilli()), "+inf").Result()
	if err != nil {
		return false, p.unreachable(ctx, err)
	}
	return n > 0, nil
}

// WorkerAlive reports whether the worker with this id keeps its heartbeat
// (a janitor uses it to tell a dead worker's leftovers from a live one's).
func (p *Plane) WorkerAlive(ctx context.Context, id string) (bool, error) {
	return p.anyAlive(ctx, plane.Request{Worker: id})
}

// queue adds the job to its queue and wakes the workers that could take it.
func (p *Plane) queue(ctx context.Context, r plane.Request, tenant uuid.UUID, raw []byte) error {
	if r.Worker != "" {
		if err := p.c.RPush(ctx, p.keys.workerQueue(r.Worker), raw).Err(); err != nil {
			return err
		}
		return p.c.Publish(ctx, p.keys.wakeWorker(r.Worker), "1").Err()
	}
	err := enqueue.Run(ctx, p.c, []string{p.keys.turns(r.Pool), p.keys.seq(r.Pool), p.keys.tenantQueuePrefix(r.Pool) + tenant.String()},
		tenant.String(), raw).Err()
	if err != nil {
		return err
	}
	return p.c.Publish(ctx, p.keys.wakePool(r.Pool), "1").Err()
}

// unreachable is the error for a Redis failure during a call.
func (p *Plane) unreachable(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fault.Newf(fault.Unavailable, err, "the worker plane cannot be reached; retry later")
}

// waitCall follows one queued job to its answer.
type waitCall struct {
	p          *Plane
	r          plane.Request
	env        envelope
	raw        []byte
	onProgress func(plane.Progress)
	maxWait    *time.Timer
	replies    <-chan *redis.Message
	worker     string // who took it; "" while queued
	started    bool   // the worker reported progress: the work was running
}

func (w *waitCall) wait(ctx context.Context) (json.RawMessage, error) {
	check := time.NewTicker(Heartbeat)
	defer check.Stop()
	for {
		select {
		case m, ok := <-w.replies:
			if !ok {
				return nil, w.p.unreachable(ctx, errors.New("reply subscription closed"))
			}
			if answer, err, done := w.handle(m); done {
				return answer, err
			}
		case <-check.C:
			if err := w.stillAlive(ctx); err != nil {
				return nil, err
			}
		case <-w.maxWait.C:
			if w.worker == "" {
				w.giveUp(ctx)
				return nil, fault.Newf(fault.Unavailable, plane.ErrBusy, "every worker stayed busy for %s; the work was not started",
					w.env.Deadline.Sub(w.env.Enqueued).Round(time.Millisecond))
			}
		case <-ctx.Done():
			w.giveUp(ctx)
			return nil, ctx.Err()
		}
	}
}

// handle reads one reply message; done reports the end of the call.
func (w *waitCall) handle(m *redis.Message) (answer json.RawMessage, err error, done bool) {
	var msg message
	if json.Unmarshal([]byte(m.Payload), &msg) != nil {
		return nil, nil, false
	}
	switch msg.Type {
	case "taken":
		w.worker = msg.Worker
	case "progress":
		w.started = true
		if w.onProgress != nil && msg.Progress != nil {
			w.onProgress(*msg.Progress)
		}
	case "done":
		if msg.Code != "" {
			return nil, &fault.Error{Code: msg.Code, Msg: msg.Message}, true
		}
		return msg.Answer, nil, true
	}
	return nil, nil, false
}

// stillAlive checks, once per heartbeat, that the worker running the job
// (or, while it is queued, some worker that could take it) is alive.
func (w *waitCall) stillAlive(ctx context.Context) error {
	if w.worker != "" {
		n, err := w.p.c.Exists(ctx, w.p.keys.alive(w.worker)).Result()
		if err != nil || n == 1 {
			return nil // a Redis hiccup is not a dead worker; the next check decides
		}
		return &plane.LostError{Worker: w.worker, Started: w.started}
	}
	alive, err := w.p.anyAlive(ctx, w.r)
	if err != nil || alive {
		return nil
	}
	w.giveUp(ctx)
	return plane.ErrNoWorker
}

// giveUp withdraws the job: out of its queue when it is still there, else
// a cancel to the worker that has it. It runs after ctx may have ended.
func (w *waitCall) giveUp(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	c, k := w.p.c, w.p.keys
	if err := c.Set(ctx, k.cancelled(w.env.ID), "1", cancelTTL).Err(); err != nil {
		w.p.log.Warn("worker plane: cancel", "job", w.env.ID, "err", err)
	}
	if w.worker == "" {
		turns, queue := "", k.workerQueue(w.r.Worker)
		if w.r.Worker == "" {
			turns, queue = k.turns(w.r.Pool), k.tenantQueuePrefix(w.r.Pool)+w.env.Tenant.String()
		}
		n, err := withdraw.Run(ctx, c, []string{turns, queue}, w.env.Tenant.String(), w.raw).Int()
		if err == nil && n == 1 {
			return // never taken
		}
		// Taken at this moment: the worker either sees the cancel key or
		// has announced itself by the time the reply comes.
		w.worker = w.awaitTaken(ctx)
	}
	if w.worker != "" {
		if err := c.Publish(ctx, k.control(w.worker), w.env.ID.String()).Err(); err != nil {
			w.p.log.Warn("worker plane: cancel", "job", w.env.ID, "err", err)
		}
	}
}

// awaitTaken reads the reply channel briefly for the worker that took the
// job; the cancel key covers a worker that announces itself later.
func (w *waitCall) awaitTaken(ctx context.Context) string {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case m, ok := <-w.replies:
			if !ok {
				return ""
			}
			var msg message
			if json.Unmarshal([]byte(m.Payload), &msg) == nil && msg.Type == "taken" {
				return msg.Worker
			}
		case <-t.C:
			return ""
		case <-ctx.Done():
			return ""
		}
	}
}
