package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/a2a-gateway/gateway/tools"
)

// toolMode is the --agent-tools mode in effect: the flag's value, or, when it is empty,
// all when peers are configured and none otherwise.
func (c *Config) toolMode() tools.Mode {
	if c.AgentTools == "" {
		for _, p := range c.Peers {
			if p.URL != "" {
				return tools.ModeAll
			}
		}
		return tools.ModeNone
	}
	m, _ := tools.ParseMode(c.AgentTools)
	return m
}

// toolProblems reports bad tool flags.
func (c *Config) toolProblems() []error {
	var errs []error
	if c.AgentTools != "" {
		if _, err := tools.ParseMode(c.AgentTools); err != nil {
			errs = append(errs, fmt.Errorf("--agent-tools: %w", err))
		}
	}
	if c.AgentMaxToolCalls < 0 {
		errs = append(errs, errors.New("--agent-max-tool-calls must not be negative"))
	}
	if c.AgentToolTime < 0 {
		errs = append(errs, errors.New("--agent-tool-time must not be negative"))
	}
	if c.AgentHopLimit < 0 {
		errs = append(errs, errors.New("--agent-hop-limit must not be negative"))
	}
	return errs
}

// selfURL is this gateway's A2A URL as peers reach it: --public-url, else the bound
// address over http.
func (s *Server) selfURL() string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	return "http://" + s.ln.Addr().String() + "/"
}

// toolBox is the turn runner's ToolBox: nil when tools are off.
func (s *Server) toolBox() *tools.Box {
	mode := s.cfg.toolMode()
	if mode == tools.ModeNone {
		return nil
	}
	return tools.New(tools.Config{
		Mode: mode, Peers: s.cfg.Peers, Conv: s.adminService(), Self: s.selfURL(), HopLimit: s.cfg.AgentHopLimit, MaxCalls: s.cfg.AgentMaxToolCalls,
		PeerTimeout: s.cfg.AgentTimeout, Observe: s.metrics.tools, Logger: s.log, TracerProvider: s.cfg.TracerProvider,
	})
}

// toolMetrics counts the agent's tool calls by tool and outcome and times them.
type toolMetrics struct {
	calls   *prometheus.CounterVec
	seconds *prometheus.HistogramVec
}

func newToolMetrics(reg *prometheus.Registry) *toolMetrics {
	t := &toolMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_agent_tool_calls_total", Help: "Tool calls of the agent, by tool and outcome (ok, refused, failed).",
		}, []string{"tool", "outcome"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_agent_tool_call_seconds", Help: "Time one tool call of the agent took, by tool.", Buckets: slowBuckets,
		}, []string{"tool"}),
	}
	reg.MustRegister(t.calls, t.seconds)
	return t
}

// ToolCall implements tools.Observer. Tool names the model made up are counted as
// "unknown", so the label set stays bounded.
func (t *toolMetrics) ToolCall(tool, outcome string, d time.Duration) {
	switch tool {
	case tools.ToolPeersList, tools.ToolPeerSend, tools.ToolHistory:
	default:
		tool = "unknown"
	}
	t.calls.WithLabelValues(tool, strings.ToLower(outcome)).Inc()
	t.seconds.WithLabelValues(tool).Observe(d.Seconds())
}

// toolsHopsDescription declares the hops extension in the agent card.
const toolsHopsDescription = "A message this gateway's agent sends to a peer carries, under this key of its metadata, {hop, chain: [{url, contextId}]}: how many agent-to-agent calls led to it and through which gateways and conversations. The agent does not call out past its hop limit (--agent-hop-limit) or back into a gateway or conversation already in the chain."
