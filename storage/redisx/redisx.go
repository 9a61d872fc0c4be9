// Package redisx opens Visor's Redis client. Redis carries change events
// between replicas, caches and rate limits; it is never the source of truth,
// so everything that uses it must cope with it being briefly gone.
// Reconnection is go-redis's own: a dropped connection is redialed on the
// next command.
package redisx

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is a go-redis client. Callers use its go-redis API directly.
type Client struct {
	*redis.Client
	addr string
}

// Open parses url (redis://[user:password@]host:port/db), connects and
// pings. Errors are one line that names the address, never the password.
func Open(ctx context.Context, url string) (*Client, error) {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) })
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("parse Redis URL: %s (want redis://host:port/db)", redactURLError(err))
	}
	opts.DialTimeout = 5 * time.Second
	// Honour callers' deadlines: a frozen Redis must not hold a request (or
	// a change publication) past its context.
	opts.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opts)
	c := &Client{Client: rdb, addr: opts.Addr}
	if err := c.Ping(ctx); err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return c, nil
}

// go-redis logs pool dial failures through a process-wide logger that
// writes to stderr. Every such failure also comes back to the caller as an
// error, which Visor logs with context, so the library's copy is dropped.
var quietOnce sync.Once

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Addr returns the host:port the client talks to.
func (c *Client) Addr() string { return c.addr }

// Ping checks that Redis answers.
func (c *Client) Ping(ctx context.Context) error {
	if err := c.Client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("connect to Redis at %s: %w", c.addr, err)
	}
	return nil
}

// Close closes every connection.
func (c *Client) Close() error { return c.Client.Close() }

// redactURLError keeps go-redis's reason but never echoes the URL, which may
// carry a password.
func redactURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return strings.TrimPrefix(err.Error(), "redis: ")
}
