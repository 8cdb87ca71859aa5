package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/conversations"
	"github.com/a2a-gateway/gateway/ledger"
	"github.com/a2a-gateway/gateway/redact"
)

// pageNames are the pages; each is templates/<name>.html with templates/layout.html.
var pageNames = []string{"login", "list", "conversation", "calls", "replay", "live", "health", "error"}

var funcs = template.FuncMap{
	"when": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"segments": segments,
	"convq":    convQuery,
	"ms":       millis,
}

func parsePages() (map[string]*template.Template, error) {
	pages := map[string]*template.Template{}
	for _, n := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/"+n+".html")
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", n, err)
		}
		pages[n] = t
	}
	return pages, nil
}

// page is what every template gets: the title, the CSRF token of its forms, whether the
// logout form is shown, and the page's own data.
type page struct {
	Title  string
	CSRF   string
	Logout bool
	Data   any
}

// render writes the page name with data (buffered: a template error is a 500, not half a
// page).
func (h *Handler) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	var buf bytes.Buffer
	p := page{Title: title, CSRF: h.csrfToken(w, r), Logout: h.cfg.AdminToken != "", Data: data}
	if err := h.pages[name].Execute(&buf, p); err != nil {
		h.cfg.Log.ErrorContext(r.Context(), "console template", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// fail renders err as an error page with the status the service's typed errors call for.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	var fe *conversations.FieldError
	var nf *conversations.NotFoundError
	var ae *conversations.AmbiguousError
	var pe *conversations.PastEndError
	switch {
	case errors.As(err, &fe), errors.As(err, &pe):
		status = http.StatusBadRequest
	case errors.As(err, &nf):
		status = http.StatusNotFound
	case errors.As(err, &ae):
		status = http.StatusConflict
	default:
		h.cfg.Log.ErrorContext(r.Context(), "console", "err", err)
	}
	h.render(w, r, status, "error", "Error", err.Error())
}

// loginData is the login page's: the refusal of the last attempt, and the throttle's
// rule (the page states it).
type loginData struct {
	Error    string
	MaxFails int
	Window   int // seconds
}

func (h *Handler) renderLogin(w http.ResponseWriter, r *http.Request, status int, msg string) {
	h.render(w, r, status, "login", "Log in", loginData{Error: msg, MaxFails: maxFails, Window: int(failWindow.Seconds())})
}

func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.cfg.AdminToken == "" {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	h.renderLogin(w, r, http.StatusOK, "")
}

// login checks the token of the login form (CSRF first, then the throttle: a source
// with too many wrong tokens is refused without its token being compared, see maxFails)
// and starts a session; a correct token forgets the source's failures.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.cfg.AdminToken == "" {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
		return
	}
	if !h.csrfOK(r) {
		http.Error(w, "forbidden: missing or wrong CSRF token (reload the login page)", http.StatusForbidden)
		return
	}
	src := source(r)
	if left, blocked := h.fails.blocked(src); blocked {
		secs := strconv.Itoa(retryAfter(left))
		w.Header().Set("Retry-After", secs)
		h.renderLogin(w, r, http.StatusTooManyRequests, "Too many wrong tokens: no token from this address is checked for "+secs+" s more.")
		return
	}
	if !equal(r.PostForm.Get("token"), h.cfg.AdminToken) {
		h.fails.fail(src)
		h.renderLogin(w, r, http.StatusUnauthorized, "Wrong token.")
		return
	}
	h.fails.reset(src)
	id := h.sessions.create()
	http.SetCookie(w, h.wsCookie(r, id, 0)) // for the Live page's socket, see Operator
	http.SetCookie(w, h.cookie(r, sessionCookie, id, 0))
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if !h.csrfOK(r) {
		http.Error(w, "forbidden: missing or wrong CSRF token", http.StatusForbidden)
		return
	}
	if c, err := r.Cookie(sessionCookie); err == nil {
		h.sessions.remove(c.Value)
	}
	http.SetCookie(w, h.wsCookie(r, "", -1))
	http.SetCookie(w, h.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// pageSize is how many conversations a list page shows; maxScan bounds how many service
// pages one list page reads while a state filter drops rows.
const (
	pageSize = 50
	maxScan  = 10
)

// row is one conversation of the list; For is how long its running task has run ("" when
// none runs).
type row struct {
	conversations.Summary
	For string
}

type listData struct {
	Prefix, Peer, State string
	Rows                []row
	Next                string
	Now                 time.Time
}

// list is the conversations page: a page of the service's listing (newest activity
// first), by contextId prefix, peer and state (running or idle).
func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d := listData{Prefix: q.Get("prefix"), Peer: q.Get("peer"), State: q.Get("state"), Now: time.Now()}
	opts := conversations.ListOptions{Owner: d.Peer, Prefix: d.Prefix, Limit: pageSize, Cursor: q.Get("cursor")}
	for range maxScan {
		p, err := h.cfg.Service.List(r.Context(), opts)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, c := range p.Conversations {
			if d.State == "" || (d.State == "running") == (c.RunningTask != "") {
				d.Rows = append(d.Rows, row{Summary: c, For: h.runningFor(r, c, d.Now)})
			}
		}
		d.Next = p.Next
		if p.Next == "" || len(d.Rows) >= pageSize/2 {
			break
		}
		opts.Cursor = p.Next
	}
	h.render(w, r, http.StatusOK, "list", "Conversations", d)
}

// runningFor says how long c's running task has run: since its first entry among the
// conversation's last liveBack entries ("" when none runs or it cannot be read).
func (h *Handler) runningFor(r *http.Request, c conversations.Summary, now time.Time) string {
	if c.RunningTask == "" {
		return ""
	}
	res, err := h.cfg.Service.Show(r.Context(), conversations.Ref{ContextID: c.ContextID, Owner: c.Peer}, conversations.ShowOptions{Limit: liveBack, All: true})
	if err != nil {
		return ""
	}
	for _, e := range res.Entries {
		if e.TaskID == c.RunningTask {
			return now.Sub(e.CreatedAt).Round(time.Second).String()
		}
	}
	return ""
}

// ref is the conversation a page names: ?id=<contextId>&peer=<owner>.
func ref(r *http.Request) conversations.Ref {
	return conversations.Ref{ContextID: r.FormValue("id"), Owner: r.FormValue("peer")}
}

// convQuery is the query naming a conversation, escaped by url.Values.
func convQuery(contextID, peer string) template.URL {
	return template.URL(url.Values{"id": {contextID}, "peer": {peer}}.Encode()) //nolint:gosec // every value is query-escaped by Encode
}

// ConversationURL is the path of the console's page of a conversation (for links other
// views carry: the call tree's nodes).
func ConversationURL(owner, contextID string) string {
	return Prefix + "/conversation?" + string(convQuery(contextID, owner))
}

// segment is a piece of an entry's text: plain, or a redaction placeholder.
type segment struct {
	Text     string
	Redacted bool
}

// segments splits s around the redaction placeholders ("[redacted:<kind>]").
func segments(s string) []segment {
	var out []segment
	for s != "" {
		i := strings.Index(s, redact.Prefix)
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], ']')
		if j < 0 {
			break
		}
		if i > 0 {
			out = append(out, segment{Text: s[:i]})
		}
		out = append(out, segment{Text: s[i : i+j+1], Redacted: true})
		s = s[i+j+1:]
	}
	if s != "" {
		out = append(out, segment{Text: s})
	}
	return out
}

// entryView is one timeline row.
type entryView struct {
	ledger.Entry
	Text    string
	Meta    string
	NewTask bool // the first entry of its task in the timeline
	Audit   bool
	Tool    *toolView   // a tool call or result: its tool, arguments or outcome, outbound link
	Origin  *originView // an outbound message a tool call sent: that call
	Figures string      // a turn's final status: its prefix reuse and provider cache (issue #38)
}

type conversationData struct {
	Conv    conversations.Summary
	Entries []entryView
	Audit   bool
	Verify  *conversations.VerifyReport
	Link    template.URL              // the query naming this conversation (url.Values.Encode: escaped)
	Memory  *conversations.MemoryView // the latest memory snapshot, facts linked to their evidence
}

func (h *Handler) conversation(w http.ResponseWriter, r *http.Request) {
	h.showConversation(w, r, nil)
}

// verify checks this conversation's chain (on demand) and shows the conversation with
// the outcome.
func (h *Handler) verify(w http.ResponseWriter, r *http.Request) {
	rep, err := h.cfg.Service.Verify(r.Context(), ref(r))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.showConversation(w, r, &rep)
}

func (h *Handler) showConversation(w http.ResponseWriter, r *http.Request, rep *conversations.VerifyReport) {
	audit := r.FormValue("audit") == "1"
	res, err := h.cfg.Service.Show(r.Context(), ref(r), conversations.ShowOptions{All: true})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	d := conversationData{Conv: res.Conversation, Audit: audit, Verify: rep,
		Link: convQuery(res.Conversation.ContextID, res.Conversation.Peer), Memory: res.Memory}
	task := ""
	outbound := outboundOf(res.Entries)
	for _, e := range res.Entries {
		v := entryView{Entry: e, Text: entryText(e), Audit: e.Visibility == ledger.VisibilityAudit, Tool: toolViewOf(e, outbound), Origin: originOf(e),
			Figures: conversations.TurnFigures(&e)}
		if len(e.Metadata) > 0 {
			v.Meta = string(e.Metadata)
		}
		if e.TaskID != "" && e.TaskID != task {
			v.NewTask, task = true, e.TaskID
		}
		d.Entries = append(d.Entries, v)
	}
	h.render(w, r, http.StatusOK, "conversation", res.Conversation.ContextID, d)
}

// entryText joins an entry's text parts; other parts are named by kind and size.
func entryText(e ledger.Entry) string {
	var b strings.Builder
	for i, p := range e.Parts {
		if i > 0 {
			b.WriteString("\n")
		}
		switch {
		case p.Text != "":
			b.WriteString(p.Text)
		case len(p.Data) > 0:
			b.Write(p.Data)
		case p.ArtifactRef != "":
			fmt.Fprintf(&b, "(%s part, %d bytes, %s)", p.Kind, p.Size, p.ArtifactRef)
		default:
			fmt.Fprintf(&b, "(%s part %s %s)", p.Kind, p.Filename, p.URL)
		}
	}
	return b.String()
}

type replayData struct {
	Res  conversations.ReplayResult
	At   uint64
	Link template.URL
}

// replay shows what the agent was given at a turn (?at=<seq>; none: the latest): the
// same result as `gateway conversations replay`.
func (h *Handler) replay(w http.ResponseWriter, r *http.Request) {
	var at uint64
	if s := r.FormValue("at"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			h.render(w, r, http.StatusBadRequest, "error", "Error", "at: not a sequence number")
			return
		}
		at = n
	}
	res, err := h.cfg.Service.Replay(r.Context(), ref(r), at)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "replay", "What the agent saw", replayData{Res: res, At: at,
		Link: convQuery(res.ContextID, res.Peer)})
}

// liveBack is how many of a conversation's last entries the live page searches for the
// start of the running turn.
const liveBack = 500

// healthScan is how many of the most recently active conversations the health page asks
// for their lease holder.
const healthScan = 200

type liveData struct {
	ContextID, Peer string
	AfterSeq        uint64
}

// live is the live view of a conversation: the page names the context, live.js
// subscribes over /ws from the conversation's last seq.
func (h *Handler) live(w http.ResponseWriter, r *http.Request) {
	res, err := h.cfg.Service.Show(r.Context(), ref(r), conversations.ShowOptions{Limit: liveBack, All: true})
	if err != nil {
		h.fail(w, r, err)
		return
	}
	c := res.Conversation
	after := c.LastSeq
	for i := len(res.Entries) - 1; i >= 0 && c.RunningTask != ""; i-- {
		if res.Entries[i].TaskID == c.RunningTask {
			after = res.Entries[i].Seq - 1 // a running turn: from its start
		}
	}
	h.render(w, r, http.StatusOK, "live", "Live: "+c.ContextID, liveData{ContextID: c.ContextID, Peer: c.Peer, AfterSeq: after})
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	var d *Health
	if h.cfg.Health != nil {
		v := h.cfg.Health(r.Context())
		d = &v
		// Running conversations are among the most recently active: a turn appends as it
		// starts.
		p, err := h.cfg.Service.List(r.Context(), conversations.ListOptions{Limit: healthScan})
		if err != nil {
			h.fail(w, r, err)
			return
		}
		for _, c := range p.Conversations {
			if c.RunningTask != "" {
				d.Leases = append(d.Leases, Lease{ContextID: c.ContextID, Peer: c.Peer, Holder: c.RunningTask})
			}
		}
	}
	h.render(w, r, http.StatusOK, "health", "Health", d)
}
