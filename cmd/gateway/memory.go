package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
)

// printMemory writes a memory snapshot with each fact's evidence: the entries it cites
// (seq, kind, the start of their text), and the facts the evidence check refuses now.
func printMemory(w io.Writer, m *conversations.MemoryView) {
	fmt.Fprintf(w, "memory (seq %d, entries #%d–#%d, %s, %d facts)\n", m.Seq, m.First, m.Last, m.Summariser, len(m.Facts))
	for _, f := range m.Facts {
		var ids []string
		for _, ev := range f.Evidence {
			id := fmt.Sprintf("#%d", ev.Seq)
			if !ev.Found {
				id += " (missing)"
			}
			ids = append(ids, id)
		}
		fmt.Fprintf(w, "  - %s  [evidence %s; from %s]\n", oneLine(f.Text, 200), strings.Join(ids, ", "), f.Trust)
		for _, ev := range f.Evidence {
			if ev.Found {
				fmt.Fprintf(w, "      #%d %s: %s\n", ev.Seq, strings.ToLower(string(ev.Kind)), oneLine(ev.Excerpt, 120))
			}
		}
	}
	for _, p := range m.Problems {
		fmt.Fprintf(w, "  ! %s: %s\n", oneLine(p.Text, 120), p.Reason)
	}
}

// printRebuild writes a memory rebuild report, one line per stored snapshot.
func printRebuild(w io.Writer, rep conversations.MemoryReport) {
	fmt.Fprintf(w, "conversation %s  peer %s  snapshots %d\n", rep.ContextID, rep.Peer, len(rep.Snapshots))
	for _, s := range rep.Snapshots {
		verdict := "rebuilt: equal"
		if !s.Equal {
			verdict = fmt.Sprintf("rebuilt: differs (%d facts rebuilt)", s.RebuiltFacts)
		}
		fmt.Fprintf(w, "seq %d  #%d–#%d  %s  %d facts  evidence problems %d  %s\n", s.Seq, s.First, s.Last, s.Summariser, len(s.Facts), len(s.Problems), verdict)
	}
	if rep.Written > 0 {
		fmt.Fprintf(w, "appended the rebuilt snapshot at seq %d\n", rep.Written)
	}
}

// memoryLine is the show line of a MEMORY_SNAPSHOT entry.
func memoryLine(e *ledger.Entry) string {
	m, err := ledger.MemoryRecord(e)
	if err != nil {
		return "(undecodable snapshot)"
	}
	return fmt.Sprintf("snapshot of #%d–#%d: %d facts (%s)", m.First, m.Last, len(m.Facts), m.Summariser)
}
