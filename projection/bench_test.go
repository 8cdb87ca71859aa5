package projection

import (
	"fmt"
	"testing"

	"github.com/a2a-gateway/gateway/history"
)

// BenchmarkBuild projects the newest turn of conversations of 100, 1,000 and 10,000
// ledger items (all passed to Build). Build walks back from the newest item and stops
// when the limit or budget is reached, so the cost should not grow with the length.
func BenchmarkBuild(b *testing.B) {
	opts := convOptions{resultBytes: 6000, statuses: true, userBytes: 300, replyBytes: 800}
	for _, limit := range []int{history.DefaultLimit, history.MaxLimit} {
		for _, n := range []int{100, 1000, 10_000} {
			items := itemsOf(n, opts)
			p := Policy{HistoryLimit: limit, Peer: "peer-a", Operator: "Be concise."}
			cur := current("what changed since the last review?")
			b.Run(fmt.Sprintf("limit=%d/items=%d", limit, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := Build(items, cur, p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkOpenAI and BenchmarkAnthropic encode a 200-message request.
func BenchmarkOpenAI(b *testing.B) {
	req, _ := mustBuild(b, itemsOf(1000, convOptions{resultBytes: 6000, statuses: true}), current("q"), Policy{HistoryLimit: 200})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.OpenAI("m", true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnthropic(b *testing.B) {
	req, _ := mustBuild(b, itemsOf(1000, convOptions{resultBytes: 6000, statuses: true}), current("q"), Policy{HistoryLimit: 200})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := req.Anthropic("m", 1024, true); err != nil {
			b.Fatal(err)
		}
	}
}
