package loadgen

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// Report is what one [Run] measured inside its window. Percentiles are
// nearest-rank values of the full sorted latency histogram, so
// P50 <= P90 <= P99 always holds.
type Report struct {
	// Requests is the number of requests that completed inside the window,
	// successful or not.
	Requests int
	// Errors is how many of them failed.
	Errors int
	// ErrorsByCode counts failures by JSON-RPC code ("-32004"), HTTP status
	// ("http 503") or one of the ErrKey constants. It is never nil.
	ErrorsByCode map[string]int
	// Duration is the length of the window the figures cover.
	Duration time.Duration
	// RPS is successful requests per second of Duration.
	RPS float64
	// P50, P90 and P99 are latency percentiles of successful requests: until
	// the whole answer was read or, for streams, until the terminal event.
	P50, P90, P99 time.Duration
	// TTFBP50 and TTFBP99 are percentiles of the time to the first SSE
	// event of successful streams; zero when not streaming.
	TTFBP50, TTFBP99 time.Duration
	// ErrorP50 and ErrorP99 are latency percentiles of failed requests,
	// such as how fast a busy context is refused; zero without errors.
	ErrorP50, ErrorP99 time.Duration
}

// summarize merges the workers' histograms into a Report over window.
func summarize(results []workerResult, window time.Duration) Report {
	var ok, ttfb, failed []time.Duration
	r := Report{ErrorsByCode: map[string]int{}, Duration: window}
	for _, res := range results {
		ok = append(ok, res.ok...)
		ttfb = append(ttfb, res.ttfb...)
		failed = append(failed, res.failed...)
		for k, n := range res.errs {
			r.ErrorsByCode[k] += n
		}
	}
	slices.Sort(ok)
	slices.Sort(ttfb)
	slices.Sort(failed)
	r.Errors = len(failed)
	r.Requests = len(ok) + len(failed)
	if window > 0 {
		r.RPS = float64(len(ok)) / window.Seconds()
	}
	r.P50, r.P90, r.P99 = percentile(ok, 50), percentile(ok, 90), percentile(ok, 99)
	r.TTFBP50, r.TTFBP99 = percentile(ttfb, 50), percentile(ttfb, 99)
	r.ErrorP50, r.ErrorP99 = percentile(failed, 50), percentile(failed, 99)
	return r
}

// percentile returns the nearest-rank p-th percentile of sorted, or zero if
// it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	return sorted[min(max(rank, 1), len(sorted))-1]
}

// ms formats d as milliseconds with three decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond))
}

// errorCodes lists r's error keys, most frequent first.
func (r Report) errorCodes() []string {
	keys := slices.Collect(maps.Keys(r.ErrorsByCode))
	slices.SortFunc(keys, func(a, b string) int {
		if c := cmp.Compare(r.ErrorsByCode[b], r.ErrorsByCode[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return keys
}

// WriteText writes r as aligned text: requests, errors by code, successful
// requests per second and latency percentiles in milliseconds. It returns
// the first write error.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "requests     %d in %.3fs (%d ok, %d errors)\n",
		r.Requests, r.Duration.Seconds(), r.Requests-r.Errors, r.Errors)
	fmt.Fprintf(&b, "requests/s   %.1f ok\n", r.RPS)
	fmt.Fprintf(&b, "latency ms   p50 %s  p90 %s  p99 %s\n", ms(r.P50), ms(r.P90), ms(r.P99))
	if r.TTFBP50 > 0 {
		fmt.Fprintf(&b, "first event  p50 %s  p99 %s ms\n", ms(r.TTFBP50), ms(r.TTFBP99))
	}
	if r.Errors > 0 {
		codes := r.errorCodes()
		for i, k := range codes {
			codes[i] = fmt.Sprintf("%s: %d", k, r.ErrorsByCode[k])
		}
		fmt.Fprintf(&b, "errors       %s\n", strings.Join(codes, ", "))
		fmt.Fprintf(&b, "error ms     p50 %s  p99 %s\n", ms(r.ErrorP50), ms(r.ErrorP99))
		writeErrorNotes(&b, r.ErrorsByCode)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// errorNotes explain the error codes with which a gateway refuses load that a run did
// not mean to measure: the run then measured a limit, not throughput.
var errorNotes = []struct{ key, note string }{
	{"-32000", "-32000 from this gateway is RATE_LIMITED: it limits each peer (--rate-limit, 600/m by default); " +
		"start it with --rate-limit 0 to measure throughput"},
	{"-32004", "-32004 from this gateway is CONTEXT_BUSY when requests share a contextId (one task per context): " +
		"give each worker its own with --contexts at least --concurrency"},
}

// writeErrorNotes writes a "note" line for each code of errorNotes among codes.
func writeErrorNotes(b *strings.Builder, codes map[string]int) {
	for _, n := range errorNotes {
		if codes[n.key] > 0 {
			fmt.Fprintf(b, "note         %s\n", n.note)
		}
	}
}

// reportJSON is the machine-readable form of a Report; times in
// milliseconds, the window in seconds.
type reportJSON struct {
	Requests     int            `json:"requests"`
	Errors       int            `json:"errors"`
	ErrorsByCode map[string]int `json:"errors_by_code"`
	DurationS    float64        `json:"duration_s"`
	RPS          float64        `json:"rps"`
	P50MS        float64        `json:"p50_ms"`
	P90MS        float64        `json:"p90_ms"`
	P99MS        float64        `json:"p99_ms"`
	TTFBP50MS    float64        `json:"ttfb_p50_ms"`
	TTFBP99MS    float64        `json:"ttfb_p99_ms"`
	ErrorP50MS   float64        `json:"error_p50_ms"`
	ErrorP99MS   float64        `json:"error_p99_ms"`
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MarshalJSON encodes r with snake_case keys, latencies as fractional
// milliseconds ("p50_ms") and the window in seconds ("duration_s").
func (r Report) MarshalJSON() ([]byte, error) {
	byCode := r.ErrorsByCode
	if byCode == nil {
		byCode = map[string]int{}
	}
	return json.Marshal(reportJSON{
		Requests:     r.Requests,
		Errors:       r.Errors,
		ErrorsByCode: byCode,
		DurationS:    r.Duration.Seconds(),
		RPS:          r.RPS,
		P50MS:        msf(r.P50),
		P90MS:        msf(r.P90),
		P99MS:        msf(r.P99),
		TTFBP50MS:    msf(r.TTFBP50),
		TTFBP99MS:    msf(r.TTFBP99),
		ErrorP50MS:   msf(r.ErrorP50),
		ErrorP99MS:   msf(r.ErrorP99),
	})
}
