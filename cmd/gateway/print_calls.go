package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/a2a-gateway/gateway/conversations"
)

// printCalls writes a call tree as indented text: the hop chain, what caused the
// conversation, then the conversation and its calls, each outbound conversation under
// its call.
func printCalls(w io.Writer, tree conversations.CallTree) {
	if len(tree.Hops) > 0 {
		links := make([]string, len(tree.Hops))
		for i, l := range tree.Hops {
			links[i] = l.URL + " (" + l.ContextID + ")"
		}
		fmt.Fprintf(w, "reached here at hop %d, through %s\n", tree.Hop, strings.Join(links, " → "))
	}
	for _, n := range tree.CausedBy {
		fmt.Fprintln(w, "caused by:")
		printCallNode(w, n, 1)
	}
	printCallNode(w, tree.Root, 0)
}

func printCallNode(w io.Writer, n conversations.CallNode, depth int) {
	pad := strings.Repeat("  ", depth)
	line := pad + n.Peer + "  " + n.ContextID
	if !n.Held {
		line += "  (not held here)"
	}
	line += nodeFacts(n.State, n.LatencyMS)
	switch n.Cut {
	case "cycle":
		line += "  (shown above)"
	case "depth":
		line += "  (too deep: not followed)"
	}
	fmt.Fprintln(w, line)
	for _, c := range n.Calls {
		fmt.Fprintln(w, pad+"  "+c.Name+nodeFacts(c.Outcome, c.LatencyMS))
		for _, a := range c.Args {
			fmt.Fprintf(w, "%s      %s: %s\n", pad, a.Key, a.Value)
		}
		if c.ArgsText != "" {
			fmt.Fprintf(w, "%s      %s\n", pad, c.ArgsText)
		}
		if c.Outbound != nil {
			printCallNode(w, *c.Outbound, depth+2)
		}
	}
	if n.Reply != nil {
		fmt.Fprintln(w, pad+"  the peer's side, held here:")
		printCallNode(w, *n.Reply, depth+2)
	}
}

// nodeFacts is "  state  latency" for the parts that are known.
func nodeFacts(state string, ms float64) string {
	s := ""
	if state != "" {
		s += "  " + state
	}
	if ms > 0 {
		s += fmt.Sprintf("  %.1f ms", ms)
	}
	return s
}
