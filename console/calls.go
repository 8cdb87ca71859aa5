package console

import (
	"fmt"
	"html/template"
	"net/http"

	"github.com/a2a-gateway/gateway/conversations"
)

type callsData struct {
	Tree conversations.CallTree
	Link template.URL // the query naming the conversation (url.Values.Encode: escaped)
}

// calls is the call view of a conversation (?id=&peer=): the calls its turns made,
// through peer_send to the outbound conversations, and what caused it; every node links
// to its conversation's page. The same tree as GET /admin/v1/conversations/{id}/calls.
func (h *Handler) calls(w http.ResponseWriter, r *http.Request) {
	tree, err := h.cfg.Service.Calls(r.Context(), ref(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	root := tree.Root
	h.render(w, r, http.StatusOK, "calls", "Calls: "+root.ContextID, callsData{Tree: tree, Link: convQuery(root.ContextID, root.Peer)})
}

// millis renders a latency in milliseconds: "12.3 ms", "4.56 s" from a second on.
func millis(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.2f s", ms/1000)
	}
	return fmt.Sprintf("%.1f ms", ms)
}
