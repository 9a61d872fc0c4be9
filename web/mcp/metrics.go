package mcp

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/visorhq/visor/services/audit"
	"github.com/visorhq/visor/web/server"
)

// Metrics are the endpoint's per-tool Prometheus metrics. Label values
// come from the code, never from a request: a tool's name only when the
// registry knows it ("unknown" otherwise), outcomes and refusal events
// from their fixed sets, so the series stay bounded by the registry.
type Metrics struct {
	calls    *prometheus.CounterVec
	refusals *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	streams  streamMetrics
}

// NewMetrics registers the tool metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "visor_mcp_tool_calls_total", Help: "MCP tools/call requests by tool and outcome (ok, tool_error, refused, failed).",
		}, []string{"tool", "outcome"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "visor_mcp_tool_refusals_total", Help: "Refused MCP tool calls by tool and refusal event.",
		}, []string{"tool", "event"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "visor_mcp_tool_call_duration_seconds", Help: "MCP tool call latency by tool and outcome, audit write included.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 600},
		}, []string{"tool", "outcome"}),
	}
	m.streams = newStreamMetrics()
	reg.MustRegister(m.calls, m.refusals, m.latency, m.streams.held, m.streams.limit, m.streams.refused)
	return m
}

// unknownTool is the tool label of a call naming no registered tool.
const unknownTool = "unknown"

// maxEventLabel bounds a refusal event label; events are constants in the
// code, so this only guards against a family misusing tools.Refused.
const maxEventLabel = 64

// observe records one finished call. tool must be a registry name or
// unknownTool.
func (m *Metrics) observe(tool, outcome, event string, took time.Duration) {
	if m == nil {
		return
	}
	m.calls.WithLabelValues(tool, outcome).Inc()
	m.latency.WithLabelValues(tool, outcome).Observe(took.Seconds())
	if outcome == audit.OutcomeRefused {
		if event == "" || len(event) > maxEventLabel {
			event = "other"
		}
		m.refusals.WithLabelValues(tool, event).Inc()
	}
}

// toolLabel is the label for a call naming name: the name when the
// registry holds it.
func (h *Handler) toolLabel(name string) string {
	if _, ok := h.reg.Get(name); ok {
		return name
	}
	return unknownTool
}

// record counts a finished call in the metrics and notes it for the
// request's log line.
func (h *Handler) record(e *callNote, tool, outcome, event string, took time.Duration) {
	label := h.toolLabel(tool)
	h.opts.Metrics.observe(label, outcome, event, took)
	e.set(label, outcome, event)
}

// callNote carries a tools/call's tool and outcome from the SDK's handler
// back to the HTTP request that carried it, for the request's log line.
type callNote struct {
	mu                   sync.Mutex
	tool, outcome, event string
}

type callNoteKey struct{}

func (n *callNote) set(tool, outcome, event string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tool, n.outcome, n.event = tool, outcome, event
}

// annotate adds the call's tool and outcome to the request's log line.
func (n *callNote) annotate(ctx context.Context) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.tool == "" {
		return
	}
	attrs := []slog.Attr{slog.String("tool", n.tool), slog.String("outcome", n.outcome)}
	if n.outcome == audit.OutcomeRefused {
		attrs = append(attrs, slog.String("event", n.event))
	}
	server.Annotate(ctx, attrs...)
}
