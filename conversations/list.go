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

// List returns a page of the conversations, newest activity first, filtered by owner
// and contextId prefix. The ledger continues from the cursor and reads the conversations
// it lists (each one's metadata, no entry): with a limit and no prefix, limit+1 of them
// (the one more tells whether a next page exists), so that every page costs its size;
// with a prefix, pages of the listing until the page is full. Errors: a [*FieldError] for
// a negative limit or a cursor no listing returned; otherwise the ledger's.
func (s *Service) List(ctx context.Context, opts ListOptions) (Page, error) {
	if opts.Limit < 0 {
		return Page{}, invalid("limit", "negative")
	}
	var after *ledger.ListCursor
	if opts.Cursor != "" {
		c, err := parseCursor(opts.Cursor)
		if err != nil {
			return Page{}, err
		}
		after = &ledger.ListCursor{LastActivity: c.at, Key: c.key}
	}
	convs, err := s.listMatching(ctx, opts, after)
	if err != nil {
		return Page{}, fromLedger(err)
	}
	page := Page{Conversations: []Summary{}}
	for i := range convs {
		if opts.Limit > 0 && len(page.Conversations) == opts.Limit {
			last := &convs[i-1]
			page.Next = cursor{at: last.LastActivity, key: last.Key}.String()
			break
		}
		page.Conversations = append(page.Conversations, s.summary(ctx, convs[i]))
	}
	return page, nil
}

// prefixBatch is how many conversations one ledger read of a prefix listing asks for.
const prefixBatch = 256

// listMatching returns, from the ledger, the conversations of opts's owner after the
// cursor whose contextId has opts.Prefix, in the listing order: limit+1 of them (fewer at
// the end; all of them when opts.Limit is 0).
func (s *Service) listMatching(ctx context.Context, opts ListOptions, after *ledger.ListCursor) ([]ledger.Conversation, error) {
	want := 0
	if opts.Limit > 0 {
		want = opts.Limit + 1
	}
	batch := want
	if opts.Prefix != "" && want > 0 {
		batch = max(want, prefixBatch)
	}
	var out []ledger.Conversation
	for {
		convs, err := s.led.List(ctx, ledger.ListOptions{Owner: opts.Owner, Limit: batch, After: after})
		if err != nil {
			return nil, err
		}
		for i := range convs {
			if strings.HasPrefix(convs[i].ContextID, opts.Prefix) {
				out = append(out, convs[i])
			}
			if want > 0 && len(out) == want {
				return out, nil
			}
		}
		if batch == 0 || len(convs) < batch {
			return out, nil
		}
		after = convs[len(convs)-1].Cursor()
	}
}
