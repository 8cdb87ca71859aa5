package turn

import (
	"context"
	"errors"

	"github.com/a2a-gateway/gateway/conversations/contextid"
	"github.com/a2a-gateway/gateway/ledger"
)

// Announce tells the runner that entries firstSeq..lastSeq of the conversation (owner,
// contextID) were committed to the shared store, by this instance or another (see
// Config.SharedStore). When a reader on this instance watches the context, it reads them
// from the store and publishes them to the context's live feed; readers drop what they
// have already (by seq) and catch up from the store over any gap, so a late, repeated or
// lost announcement only delays an event. It must not be called for a store that is not
// shared. Errors are logged, not returned: the readers catch up at the next one.
func (r *Runner) Announce(ctx context.Context, owner, contextID string, firstSeq, lastSeq uint64) {
	key := contextid.Key(owner, contextID)
	if firstSeq == 0 || lastSeq < firstSeq || !r.feeds.Watching(key) {
		return
	}
	entries, err := r.led.Range(ctx, owner, contextID, firstSeq-1, int(lastSeq-firstSeq+1))
	if err != nil && !errors.Is(err, ledger.ErrNotFound) {
		r.log.WarnContext(ctx, "live stream: an announced append could not be read", "context_key", key, "err", err)
		return
	}
	r.publish(ctx, owner, contextID, entries)
}
