package server

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// capListener closes connections accepted beyond max at once, so that a
// flood of idle connections cannot take the process's last descriptors:
// Postgres, Redis and the files the process opens keep theirs. Accepting
// and closing (rather than not accepting) keeps the backlog moving; the
// refused client sees its connection closed and retries.
type capListener struct {
	net.Listener
	max     int64
	open    atomic.Int64
	gauge   prometheus.Gauge
	refused prometheus.Counter
}

func newCapListener(ln net.Listener, max int, reg prometheus.Registerer) *capListener {
	l := &capListener{Listener: ln, max: int64(max),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "visor_http_connections", Help: "HTTP connections this process holds open now."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "visor_http_connections_refused_total", Help: "HTTP connections closed at once because the process held VISOR_HTTP_MAX_CONNECTIONS."}),
	}
	reg.MustRegister(l.gauge, l.refused)
	return l
}

// Accept returns the next connection under the cap.
func (l *capListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			l.refused.Inc()
			_ = c.Close()
			continue
		}
		l.gauge.Set(float64(l.open.Load()))
		return &capConn{Conn: c, l: l}, nil
	}
}

// capConn gives its place back once, when it is closed.
type capConn struct {
	net.Conn
	l    *capListener
	once sync.Once
}

func (c *capConn) Close() error {
	c.once.Do(func() { c.l.gauge.Set(float64(c.l.open.Add(-1))) })
	return c.Conn.Close()
}
