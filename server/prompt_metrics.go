package server

import "github.com/prometheus/client_golang/prometheus"

// promptMetrics are the prompt-cache figures of issue #38: how much of each request
// repeats the conversation's previous one as its prefix, and what the providers say they
// served from their prompt caches.
type promptMetrics struct {
	reuse        prometheus.Histogram
	inputTokens  prometheus.Counter
	cachedTokens prometheus.Counter
}

func newPromptMetrics(reg *prometheus.Registry) *promptMetrics {
	p := &promptMetrics{
		reuse: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "gateway_prompt_prefix_reuse_ratio",
			Help:    "Per turn, the longest common prefix of the request given to the agent and the conversation's previous request, as a share of the previous request (1: the previous request is a prefix of this one, what keeps prompt caches hitting).",
			Buckets: ratioBuckets,
		}),
		inputTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_provider_input_tokens_total", Help: "Prompt tokens the openai and anthropic providers reported, cached ones included.",
		}),
		cachedTokens: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gateway_provider_cached_tokens_total",
			Help: "Prompt tokens the providers reported reading from their prompt cache (OpenAI usage.prompt_tokens_details.cached_tokens, Anthropic usage.cache_read_input_tokens).",
		}),
	}
	reg.MustRegister(p.reuse, p.inputTokens, p.cachedTokens)
	return p
}

// observeReuse records one turn's prefix reuse (only when there was a previous request).
func (p *promptMetrics) observeReuse(prevBytes, stablePrefix int) {
	if prevBytes > 0 {
		p.reuse.Observe(min(1, float64(stablePrefix)/float64(prevBytes)))
	}
}

// ProviderCache implements turn.Observer.
func (m *metrics) ProviderCache(input, cached int64) {
	m.prompt.inputTokens.Add(float64(input))
	m.prompt.cachedTokens.Add(float64(max(cached, 0)))
}
