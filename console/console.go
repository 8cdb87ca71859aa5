// Package console is the operator console at /console: server-rendered pages over the
// conversations service (list, a conversation's timeline, what the agent saw at a turn),
// a live view of a running reply (a small script on /ws conversations/subscribe), and
// the gateway's health numbers. Pages are html/template (every text escaped) from assets
// embedded in the binary; scripts are files, never inline, under a strict
// Content-Security-Policy.
//
// Access follows the admin API's rule: with an admin token, a login form sets an
// HttpOnly, SameSite=Strict session cookie (Secure over https) or a script sends the
// token as a bearer; without one, the console is served to loopback clients only. Every
// state-changing form carries a CSRF token bound to a cookie by an HMAC.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/a2a-gateway/gateway/conversations"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Prefix is where the console is served.
const Prefix = "/console"

// Conversations is what the console reads of the operator service. Implemented by
// *conversations.Service.
type Conversations interface {
	List(ctx context.Context, opts conversations.ListOptions) (conversations.Page, error)
	Show(ctx context.Context, ref conversations.Ref, opts conversations.ShowOptions) (conversations.ShowResult, error)
	Replay(ctx context.Context, ref conversations.Ref, atSeq uint64) (conversations.ReplayResult, error)
	Verify(ctx context.Context, ref conversations.Ref) (conversations.VerifyReport, error)
	Calls(ctx context.Context, ref conversations.Ref) (conversations.CallTree, error)
}

// Lease is one running context's lease.
type Lease struct {
	ContextID string
	Peer      string
	Holder    string // the running task
}

// Health is the gateway's health as the console shows it: the same numbers as /metrics.
type Health struct {
	Leases           []Lease
	Commits          uint64  // ledger write transactions
	CommitSecondsAvg float64 // mean commit latency
	AppendsPerCommit float64 // mean entries per commit
	Busy             uint64  // CONTEXT_BUSY rejections
	RateLimited      uint64  // RATE_LIMITED rejections, every peer
	ActiveStreams    int
}

// Config configures [New].
type Config struct {
	Service Conversations
	// AdminToken is the configured admin token; "": the console serves loopback clients
	// only, without a login.
	AdminToken string
	// Health returns the health numbers; nil: the health page says none are available.
	Health func(ctx context.Context) Health
	Log    *slog.Logger
}

// Handler serves the console. Safe for concurrent use.
type Handler struct {
	cfg      Config
	pages    map[string]*template.Template
	mux      *http.ServeMux
	csrfKey  []byte
	sessions sessions
	fails    throttle
}

// New returns the console handler for requests under [Prefix]. Errors: a template that
// does not parse (a build defect).
func New(cfg Config) (*Handler, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	h := &Handler{cfg: cfg, pages: pages, csrfKey: key, mux: http.NewServeMux(),
		sessions: sessions{m: map[string]time.Time{}}, fails: throttle{m: map[string]*failures{}}}
	h.routes()
	return h, nil
}

func (h *Handler) routes() {
	static, _ := fs.Sub(assets, "static") // the directory is embedded
	h.mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET "+Prefix+"/login", h.loginPage)
	h.mux.HandleFunc("POST "+Prefix+"/login", h.login)
	h.mux.HandleFunc("POST "+Prefix+"/logout", h.logout)
	h.mux.HandleFunc("GET "+Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	h.mux.Handle("GET "+Prefix+"/{$}", h.gate(h.list))
	h.mux.Handle("GET "+Prefix+"/conversation", h.gate(h.conversation))
	h.mux.Handle("POST "+Prefix+"/verify", h.gate(h.verify))
	h.mux.Handle("GET "+Prefix+"/calls", h.gate(h.calls))
	h.mux.Handle("GET "+Prefix+"/replay", h.gate(h.replay))
	h.mux.Handle("GET "+Prefix+"/live", h.gate(h.live))
	h.mux.Handle("GET "+Prefix+"/health", h.gate(h.health))
}

// csp is the Content-Security-Policy of every response: scripts and styles from the
// console's own files only (no inline script), connections to this origin (the /ws
// socket), no frames, forms posting here only.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// ServeHTTP sets the security headers and routes r.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Cache-Control", "no-store")
	h.mux.ServeHTTP(w, r)
}

// gate lets r through when it is authenticated (see [Handler.authed]); otherwise a GET
// goes to the login page and anything else is refused.
func (h *Handler) gate(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch h.authed(r) {
		case authOK:
			if r.Method == http.MethodPost && !h.csrfOK(r) {
				http.Error(w, "forbidden: missing or wrong CSRF token (reload the page)", http.StatusForbidden)
				return
			}
			next(w, r)
		case authLoopbackOnly:
			http.Error(w, "the console answers loopback clients only when no admin token is configured (set --admin-token)", http.StatusForbidden)
		case authThrottled:
			left, _ := h.fails.blocked(source(r))
			secs := strconv.Itoa(retryAfter(left))
			w.Header().Set("Retry-After", secs)
			http.Error(w, "too many wrong tokens from this address: retry after "+secs+" s", http.StatusTooManyRequests)
		default:
			if r.Method == http.MethodGet {
				http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "unauthorized: log in first", http.StatusUnauthorized)
		}
	})
}

type authResult int

const (
	authOK authResult = iota
	authLoopbackOnly
	authLogin
	authThrottled // too many wrong tokens from the request's source
)

const sessionCookie, csrfCookie = "console_session", "console_csrf"

// authed applies the admin API's rule: without a token, loopback clients only; with one,
// a valid session cookie or the token as a bearer. Wrong bearers count against the
// source as wrong logins do (or they would be a way around the login's bound); a right
// one does not clear the count, as a login does: a script polling with it would give a
// guesser sharing its address (a proxy's) fresh tries.
func (h *Handler) authed(r *http.Request) authResult {
	if h.cfg.AdminToken == "" {
		if loopback(r) {
			return authOK
		}
		return authLoopbackOnly
	}
	if c, err := r.Cookie(sessionCookie); err == nil && h.sessions.valid(c.Value) {
		return authOK
	}
	if got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		src := source(r)
		if _, blocked := h.fails.blocked(src); blocked {
			return authThrottled // not compared: see maxFails
		}
		if equal(got, h.cfg.AdminToken) {
			return authOK
		}
		h.fails.fail(src)
	}
	return authLogin
}

func loopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	return err == nil && ip != nil && ip.IsLoopback()
}

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// csrfToken returns the CSRF token of r's forms, setting the cookie it is bound to when
// r has none: the token is an HMAC of the cookie's random value under a per-process key,
// so a page elsewhere can neither read nor forge it.
func (h *Handler) csrfToken(w http.ResponseWriter, r *http.Request) string {
	v := ""
	if c, err := r.Cookie(csrfCookie); err == nil && c.Value != "" {
		v = c.Value
	} else {
		v = rand.Text()
		http.SetCookie(w, h.cookie(r, csrfCookie, v, 0))
	}
	return h.csrfFor(v)
}

func (h *Handler) csrfFor(cookie string) string {
	m := hmac.New(sha256.New, h.csrfKey)
	m.Write([]byte(cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfOK reports whether r's form carries the token bound to its CSRF cookie. It reads
// at most 64 KiB of form.
func (h *Handler) csrfOK(r *http.Request) bool {
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	r.Body = http.MaxBytesReader(nil, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return false
	}
	return hmac.Equal([]byte(r.PostForm.Get("csrf")), []byte(h.csrfFor(c.Value)))
}

// cookie returns a console cookie: HttpOnly, SameSite=Strict, scoped to the console,
// Secure when r came over https; maxAge 0: a session cookie, -1: delete.
func (h *Handler) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: name, Value: value, Path: Prefix, MaxAge: maxAge, HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"}
}

// WSPath is the gateway's WebSocket route: the session cookie is also scoped to it, so the
// Live page's socket carries it (see [Handler.Operator]).
const WSPath = "/ws"

// wsCookie is the session cookie as the browser sends it on GET [WSPath] only: the same
// session id and attributes as the console's, another Path.
func (h *Handler) wsCookie(r *http.Request, value string, maxAge int) *http.Cookie {
	c := h.cookie(r, sessionCookie, value, maxAge)
	c.Path = WSPath
	return c
}

// Operator reports whether r carries a valid console session cookie: an operator logged
// in with the admin token. The gateway lets such a GET /ws follow any peer's conversation
// (conversations/subscribe with "peer"). Without an admin token there are no sessions and
// it is always false; the admin token as a bearer does not count (it is no cookie a
// browser sends on its own).
func (h *Handler) Operator(r *http.Request) bool {
	if h.cfg.AdminToken == "" {
		return false
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && h.sessions.valid(c.Value)
}

// sessionTTL is how long a login lasts.
const sessionTTL = 12 * time.Hour

// sessions are the logged-in sessions: random ids and their expiry, in memory (a
// restart logs everyone out).
type sessions struct {
	mu sync.Mutex
	m  map[string]time.Time
}

func (s *sessions) create() string {
	id := rand.Text()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, exp := range s.m {
		if now.After(exp) {
			delete(s.m, k)
		}
	}
	s.m[id] = now.Add(sessionTTL)
	return id
}

func (s *sessions) valid(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.m[id]
	return ok && time.Now().Before(exp)
}

func (s *sessions) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

// Login throttling: a source with maxFails wrong tokens (login form or bearer) within
// failWindow of its first is refused (429) until the window ends, the right token
// included: a throttle that compared the token of a refused source, to let the right one
// in, would tell a guesser which guess was right and bound nothing. A correct login
// forgets the source's failures.
const (
	maxFails   = 5
	failWindow = time.Minute
	maxSources = 4096
)

type failures struct {
	n     int
	since time.Time
}

type throttle struct {
	mu sync.Mutex
	m  map[string]*failures
}

// source is the address r's failures count against: its remote IP, an IPv6 client's /64
// (a client usually holds a whole one).
func source(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
	}
	return host
}

// blocked reports whether src has used up its wrong tokens, and how long it still waits.
func (t *throttle) blocked(src string) (time.Duration, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, ok := t.m[src]
	if !ok {
		return 0, false
	}
	left := failWindow - time.Since(f.since)
	if left <= 0 {
		delete(t.m, src)
		return 0, false
	}
	return left, f.n >= maxFails
}

func (t *throttle) fail(src string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.m) >= maxSources {
		clear(t.m) // bounded memory; a flood of sources resets the count
	}
	f, ok := t.m[src]
	if !ok || time.Since(f.since) > failWindow {
		f = &failures{since: time.Now()}
		t.m[src] = f
	}
	f.n++
}

// reset forgets src's failures (a correct login).
func (t *throttle) reset(src string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, src)
}

// retryAfter is left in whole seconds, rounded up, at least 1.
func retryAfter(left time.Duration) int { return max(1, int((left+time.Second-1)/time.Second)) }
