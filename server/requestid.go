package server

import (
	"net/http"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/a2a-gateway/gateway/internal/logctx"
)

// headerRequestID names the request id, in a request (the caller's, kept when it is
// sane) and in every response.
const headerRequestID = "X-Request-Id"

// tagRequest gives r its request id (the caller's X-Request-Id when valid, else a new
// one), sets it on the response, and returns r with a context carrying the id and the
// server's logger (see package logctx), so every line logged with that context names
// the request. Only requestIDMiddleware calls it: the one place a request gets its id.
func (s *Server) tagRequest(w http.ResponseWriter, r *http.Request) *http.Request {
	ctx := r.Context()
	id := r.Header.Get(headerRequestID)
	if !logctx.ValidRequestID(id) {
		id = uuid.NewString()
	}
	w.Header().Set(headerRequestID, id)
	return r.WithContext(logctx.WithRequestID(logctx.With(ctx, s.log), id))
}

// requestIDMiddleware tags every request (see tagRequest): the router runs it before
// routing, so every route and every answer of the router itself (404, 405) has the id.
func (s *Server) requestIDMiddleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.SetRequest(s.tagRequest(c.Response(), c.Request()))
		return next(c)
	}
}
