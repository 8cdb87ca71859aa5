package server

import (
	"context"
	"net/http"

	dto "github.com/prometheus/client_model/go"

	"github.com/a2a-gateway/gateway/console"
)

// consoleHandler is the operator console (/console) over the admin API's service, with
// the health numbers of the metrics registry. A console that cannot be built (its
// embedded templates do not parse: a build defect) answers 500 and is logged.
func (s *Server) consoleHandler() http.Handler {
	h, err := console.New(console.Config{Service: s.adminService(), AdminToken: s.cfg.AdminToken,
		Health: s.consoleHealth, Log: s.log.With("component", "console")})
	if err != nil {
		s.log.Error("operator console unavailable", "err", err)
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "operator console unavailable: "+err.Error(), http.StatusInternalServerError)
		})
	}
	s.console = h
	return h
}

// consoleHealth reads the console's health numbers from the metrics registry: the same
// numbers /metrics shows.
func (s *Server) consoleHealth(context.Context) console.Health {
	var h console.Health
	fams, err := s.metrics.reg.Gather()
	if err != nil {
		s.log.Warn("console health: gather metrics", "err", err)
	}
	for _, f := range fams {
		switch f.GetName() {
		case "gateway_ledger_commit_seconds":
			n, sum := histogram(f)
			h.Commits = n
			if n > 0 {
				h.CommitSecondsAvg = sum / float64(n)
			}
		case "gateway_ledger_appends_per_commit":
			if n, sum := histogram(f); n > 0 {
				h.AppendsPerCommit = sum / float64(n)
			}
		case "gateway_busy_rejections_total":
			h.Busy = counter(f)
		case "gateway_rate_limited_total":
			h.RateLimited = counter(f)
		case "gateway_active_streams":
			for _, m := range f.GetMetric() {
				h.ActiveStreams += int(m.GetGauge().GetValue())
			}
		}
	}
	return h
}

// histogram sums a histogram family's sample counts and sums.
func histogram(f *dto.MetricFamily) (uint64, float64) {
	var n uint64
	var sum float64
	for _, m := range f.GetMetric() {
		n += m.GetHistogram().GetSampleCount()
		sum += m.GetHistogram().GetSampleSum()
	}
	return n, sum
}

// counter sums a counter family over its labels.
func counter(f *dto.MetricFamily) uint64 {
	var n float64
	for _, m := range f.GetMetric() {
		n += m.GetCounter().GetValue()
	}
	return uint64(n)
}
