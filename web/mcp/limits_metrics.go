package mcp

import "github.com/prometheus/client_golang/prometheus"

// streamMetrics show how full a replica is: the streams it holds, its
// limit, and the streams it refused and why.
type streamMetrics struct {
	held, limit prometheus.Gauge
	refused     *prometheus.CounterVec
}

func newStreamMetrics() streamMetrics {
	return streamMetrics{
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "visor_mcp_streams", Help: "Notification streams (listen and legacy GET) this replica holds now."}),
		limit: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "visor_mcp_streams_limit", Help: "The most notification streams this replica holds (0: no limit)."}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "visor_mcp_stream_refusals_total", Help: "Notification streams refused, by reason (replica_full, credential_limit)."},
			[]string{"reason"}),
	}
}

func (m *Metrics) streamsHeld(n int) {
	if m != nil {
		m.streams.held.Set(float64(n))
	}
}

func (m *Metrics) streamLimit(n int) {
	if m != nil {
		m.streams.limit.Set(float64(n))
	}
}

func (m *Metrics) streamRefused(reason string) {
	if m != nil {
		m.streams.refused.WithLabelValues(reason).Inc()
	}
}
