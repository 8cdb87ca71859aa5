package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Medians are the per-figure medians of one side's rounds in a
// [Comparison]; each figure's median is taken on its own.
type Medians struct {
	RPS                             float64
	P50, P90, P99, TTFBP50, TTFBP99 time.Duration
}

// Comparison is the outcome of [Compare]: per-round reports of the target
// and the in-process baseline, their medians, and the target/baseline
// ratios, which are the figures to quote because they cancel machine drift.
type Comparison struct {
	// Target and Baseline hold one report per round, in run order; round i
	// of the target ran just before round i of the baseline.
	Target, Baseline []Report
	// TargetMedian and BaselineMedian are the medians over the rounds.
	TargetMedian, BaselineMedian Medians
	// RPSRatio is TargetMedian.RPS / BaselineMedian.RPS: below 1 means
	// the target serves fewer requests per second than the bare echo.
	RPSRatio float64
	// P50Ratio and P99Ratio are target over baseline latency: above 1 means
	// the target is slower.
	P50Ratio, P99Ratio float64
	// TTFBP50Ratio is the same for the time to first event; zero when not
	// streaming.
	TTFBP50Ratio float64
}

// Compare starts a baseline with [StartBaseline] and runs cfg against
// cfg.URL and against the baseline in alternating rounds (target, baseline,
// target, baseline …), rounds of each, every round a full [Run] with its own
// warmup. rounds <= 0 means [DefaultRounds].
//
// It returns an error wrapping [ErrInvalidConfig] if cfg does not validate,
// or the baseline's listen error. If ctx ends early it returns the rounds
// completed so far, summarised, with the context's cause.
func Compare(ctx context.Context, cfg Config, rounds int) (Comparison, error) {
	if err := cfg.Validate(); err != nil {
		return Comparison{}, err
	}
	if rounds <= 0 {
		rounds = DefaultRounds
	}
	baseURL, stop, err := StartBaseline(ctx)
	if err != nil {
		return Comparison{}, err
	}
	defer stop()
	return CompareWith(ctx, cfg, baseURL, rounds)
}

// CompareWith is [Compare] against a baseline server already running at baseURL (for
// example the same gateway with another configuration), with the same settings as cfg.
func CompareWith(ctx context.Context, cfg Config, baseURL string, rounds int) (Comparison, error) {
	if err := cfg.Validate(); err != nil {
		return Comparison{}, err
	}
	if rounds <= 0 {
		rounds = DefaultRounds
	}
	base := cfg
	base.URL = baseURL

	var c Comparison
	for range rounds {
		r, err := Run(ctx, cfg)
		if err == nil || r.Requests > 0 {
			c.Target = append(c.Target, r)
		}
		if err != nil {
			c.summarise()
			return c, err
		}
		r, err = Run(ctx, base)
		if err == nil || r.Requests > 0 {
			c.Baseline = append(c.Baseline, r)
		}
		if err != nil {
			c.summarise()
			return c, err
		}
	}
	c.summarise()
	return c, nil
}

// summarise fills the medians and ratios from the per-round reports.
func (c *Comparison) summarise() {
	c.TargetMedian = mediansOf(c.Target)
	c.BaselineMedian = mediansOf(c.Baseline)
	t, b := c.TargetMedian, c.BaselineMedian
	c.RPSRatio = ratio(t.RPS, b.RPS)
	c.P50Ratio = ratio(float64(t.P50), float64(b.P50))
	c.P99Ratio = ratio(float64(t.P99), float64(b.P99))
	c.TTFBP50Ratio = ratio(float64(t.TTFBP50), float64(b.TTFBP50))
}

func mediansOf(rs []Report) Medians {
	pick := func(f func(Report) time.Duration) time.Duration {
		xs := make([]time.Duration, len(rs))
		for i, r := range rs {
			xs[i] = f(r)
		}
		return median(xs)
	}
	rps := make([]float64, len(rs))
	for i, r := range rs {
		rps[i] = r.RPS
	}
	return Medians{
		RPS:     median(rps),
		P50:     pick(func(r Report) time.Duration { return r.P50 }),
		P90:     pick(func(r Report) time.Duration { return r.P90 }),
		P99:     pick(func(r Report) time.Duration { return r.P99 }),
		TTFBP50: pick(func(r Report) time.Duration { return r.TTFBP50 }),
		TTFBP99: pick(func(r Report) time.Duration { return r.TTFBP99 }),
	}
}

// median returns the median of xs (the mean of the two middle values for
// an even count), or zero for none. It sorts xs.
func median[T ~int64 | ~float64](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// ratio returns a/b, or zero if b is zero.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// WriteText writes c as a table of the per-round figures and the medians,
// followed by the target/baseline ratios. It returns the first write error.
func (c Comparison) WriteText(w io.Writer) error {
	stream := c.TargetMedian.TTFBP50 > 0 || c.BaselineMedian.TTFBP50 > 0
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "round\tside\trequests\terrors\tok req/s\tp50 ms\tp90 ms\tp99 ms\t"
	if stream {
		header += "first p50 ms\tfirst p99 ms\t"
	}
	fmt.Fprintln(tw, header)
	row := func(round, side, requests, errs string, rps float64, p50, p90, p99, f50, f99 time.Duration) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t%s\t", round, side, requests, errs, rps, ms(p50), ms(p90), ms(p99))
		if stream {
			fmt.Fprintf(tw, "%s\t%s\t", ms(f50), ms(f99))
		}
		fmt.Fprintln(tw)
	}
	report := func(round int, side string, r Report) {
		row(fmt.Sprint(round), side, fmt.Sprint(r.Requests), fmt.Sprint(r.Errors), r.RPS, r.P50, r.P90, r.P99, r.TTFBP50, r.TTFBP99)
	}
	for i := range max(len(c.Target), len(c.Baseline)) {
		if i < len(c.Target) {
			report(i+1, "target", c.Target[i])
		}
		if i < len(c.Baseline) {
			report(i+1, "baseline", c.Baseline[i])
		}
	}
	for _, m := range []struct {
		side string
		m    Medians
	}{{"target", c.TargetMedian}, {"baseline", c.BaselineMedian}} {
		row("median", m.side, "", "", m.m.RPS, m.m.P50, m.m.P90, m.m.P99, m.m.TTFBP50, m.m.TTFBP99)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(&b, "\ntarget/baseline  req/s %.3f  p50 %.3f  p99 %.3f", c.RPSRatio, c.P50Ratio, c.P99Ratio)
	if stream {
		fmt.Fprintf(&b, "  first-event p50 %.3f", c.TTFBP50Ratio)
	}
	b.WriteString("\n")
	if errs := totalErrors(c.Target); errs > 0 {
		fmt.Fprintf(&b, "target errors over all rounds: %d\n", errs)
		codes := map[string]int{}
		for _, r := range c.Target {
			for k, n := range r.ErrorsByCode {
				codes[k] += n
			}
		}
		writeErrorNotes(&b, codes)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func totalErrors(rs []Report) int {
	n := 0
	for _, r := range rs {
		n += r.Errors
	}
	return n
}

// mediansJSON is the machine-readable form of Medians.
type mediansJSON struct {
	RPS       float64 `json:"rps"`
	P50MS     float64 `json:"p50_ms"`
	P90MS     float64 `json:"p90_ms"`
	P99MS     float64 `json:"p99_ms"`
	TTFBP50MS float64 `json:"ttfb_p50_ms"`
	TTFBP99MS float64 `json:"ttfb_p99_ms"`
}

// MarshalJSON encodes m with the same keys and units as [Report.MarshalJSON].
func (m Medians) MarshalJSON() ([]byte, error) {
	return json.Marshal(mediansJSON{
		RPS: m.RPS, P50MS: msf(m.P50), P90MS: msf(m.P90), P99MS: msf(m.P99),
		TTFBP50MS: msf(m.TTFBP50), TTFBP99MS: msf(m.TTFBP99),
	})
}

// comparisonJSON is the machine-readable form of a Comparison.
type comparisonJSON struct {
	Target         []Report           `json:"target"`
	Baseline       []Report           `json:"baseline"`
	TargetMedian   Medians            `json:"target_median"`
	BaselineMedian Medians            `json:"baseline_median"`
	Ratio          map[string]float64 `json:"ratio"`
}

// MarshalJSON encodes c with snake_case keys; "ratio" holds the
// target/baseline ratios under "rps", "p50", "p99" and, when streaming,
// "ttfb_p50".
func (c Comparison) MarshalJSON() ([]byte, error) {
	ratios := map[string]float64{"rps": c.RPSRatio, "p50": c.P50Ratio, "p99": c.P99Ratio}
	if c.TTFBP50Ratio != 0 {
		ratios["ttfb_p50"] = c.TTFBP50Ratio
	}
	return json.Marshal(comparisonJSON{
		Target:         nonNil(c.Target),
		Baseline:       nonNil(c.Baseline),
		TargetMedian:   c.TargetMedian,
		BaselineMedian: c.BaselineMedian,
		Ratio:          ratios,
	})
}

func nonNil(rs []Report) []Report {
	if rs == nil {
		return []Report{}
	}
	return rs
}
