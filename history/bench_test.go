package history

import (
	"fmt"
	"strings"
	"testing"
)

// benchText is a ~500-byte message with the characters that send Filter down its slower
// paths (brackets, angle brackets, several lines).
func benchText(i int) string {
	s := fmt.Sprintf("Message %d. Here is the plan we agreed on earlier, see [the docs](https://example.com/docs) "+
		"for details.\nStep one: read the config; if a < b then retry, else continue.\n"+
		"Step two: summarise the results in a short table and send it back to the operator "+
		"together with the logs.\n- keep the answer short\n- cite sources\n", i)
	for len(s) < 500 {
		s += "More context about the task and what the user asked for. "
	}
	return s[:500]
}

func BenchmarkRender(b *testing.B) {
	for _, n := range []int{20, 200} {
		turns := make([]Turn, n)
		size := 0
		for i := range turns {
			turns[i] = Turn{Role: RoleUser, Text: benchText(i)}
			if i%2 == 1 {
				turns[i].Role = RoleAssistant
			}
			size += len(turns[i].Text)
		}
		opts := Options{Limit: MaxLimit}
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if out := Render(turns, opts); !strings.HasSuffix(out, Close) {
					b.Fatal("Render() lost its Close line")
				}
			}
		})
	}
}
