package conversations

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"time"

	"github.com/a2a-gateway/gateway/ledger"
)

// ListOptions filters and pages [Service.List].
type ListOptions struct {
	Owner  string // only this owner's conversations ("" = every owner)
	Prefix string // only contextIds that start with this ("" = all)
	Limit  int    // at most this many (0 = all)
	Cursor string // continue after the page that returned it as Page.Next ("" = from the start)
}

// Page is one page of a listing, newest activity first. Next continues it ("" = the last
// page).
type Page struct {
	Conversations []Summary `json:"conversations"`
	Next          string    `json:"next,omitempty"`
}

// cursor is a position in the listing order (newest LastActivity first, ties by key).
type cursor struct {
	at  time.Time
	key string
}

func (c cursor) String() string {
	s := strconv.FormatInt(c.at.UnixNano(), 10) + "," + c.key
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func parseCursor(s string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return cursor{}, invalid("cursor", "not a cursor of a listing")
	}
	ns, key, ok := strings.Cut(string(b), ",")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil || key == "" {
		return cursor{}, invalid("cursor", "not a cursor of a listing")
	}
	return cursor{at: time.Unix(0, n), key: key}, nil
}

// after reports whether c comes after the cursor in the listing order.
func (cur cursor) after(c *ledger.Conversation) bool {
	if !c.LastActivity.Equal(cur.at) {
		return c.LastActivity.Before(cur.at)
	}
	return c.Key > cur.key
}

// List returns a page of the conversations, newest activity first, filtered by owner
// and contextId prefix. The ledger reads each conversation's metadata once, no entry.
// Errors: a [*FieldError] for a negative limit or a cursor no listing returned;
// otherwise the ledger's.
func (s *Service) List(ctx context.Context, opts ListOptions) (Page, error) {
	if opts.Limit < 0 {
		return Page{}, invalid("limit", "negative")
	}
	var cur *cursor
	if opts.Cursor != "" {
		c, err := parseCursor(opts.Cursor)
		if err != nil {
			return Page{}, err
		}
		cur = &c
	}
	lopts := ledger.ListOptions{Owner: opts.Owner}
	if cur == nil && opts.Prefix == "" && opts.Limit > 0 {
		lopts.Limit = opts.Limit + 1 // one more tells whether a next page exists
	}
	convs, err := s.led.List(ctx, lopts)
	if err != nil {
		return Page{}, fromLedger(err)
	}
	page := Page{Conversations: []Summary{}}
	var last *ledger.Conversation
	for i := range convs {
		c := &convs[i]
		if (cur != nil && !cur.after(c)) || !strings.HasPrefix(c.ContextID, opts.Prefix) {
			continue
		}
		if opts.Limit > 0 && len(page.Conversations) == opts.Limit {
			page.Next = cursor{at: last.LastActivity, key: last.Key}.String()
			break
		}
		page.Conversations = append(page.Conversations, s.summary(ctx, *c))
		last = c
	}
	return page, nil
}
