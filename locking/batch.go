package locking

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// batcher sends the lease commands that concurrent turns issue at the same moment as one
// pipeline: a group commit for Redis. One goroutine takes the first queued command,
// drains whatever else is queued, sends them all in one round trip, and answers each
// caller with its own command's reply. A lone command goes out at once (no timer); under
// load the next batch gathers while one is on the wire.
//
// Every command has OpTimeout from the moment it is queued, without a timer of its own:
// a pipeline is bounded by OpTimeout, and a command still queued when its time is up is
// answered with context.DeadlineExceeded instead of being sent. So a caller waits at
// most about twice OpTimeout (the pipeline on the wire, then its own), or until its ctx
// ends: a command whose caller gave up may still run (as with a timeout on a plain call).
type batcher struct {
	client    *redis.Client
	opTimeout time.Duration
	queue     chan *batchOp
	stop      chan struct{} // closed by close: the loop exits
	done      chan struct{} // closed when the loop has exited

	batches, commands atomic.Uint64 // pipelines sent, commands they carried
}

// batchQueue bounds the commands waiting for the next batch: 4,096 lease commands, far
// above what the gateway's turns issue at once; a full queue makes callers wait (until
// their deadline), never drops.
const batchQueue = 4096

// maxBatch is the most commands one pipeline carries.
const maxBatch = 512

type batchOp struct {
	enqueue  func(ctx context.Context, p redis.Pipeliner) // adds the command to p
	deadline time.Time                                    // not sent after this
	err      error                                        // set before done is closed: not sent
	done     chan struct{}                                // closed when the reply (or err) is in
}

func newBatcher(client *redis.Client, opTimeout time.Duration) *batcher {
	b := &batcher{client: client, opTimeout: opTimeout, queue: make(chan *batchOp, batchQueue),
		stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop() // exits when close is called
	return b
}

// do runs one command in the next batch and waits for it until ctx is done. enqueue adds
// the command to the pipeline and keeps the *Cmd it returns; read it after do returns
// nil. It returns context.DeadlineExceeded when the command was not sent within
// OpTimeout, and ErrClosed after close.
func (b *batcher) do(ctx context.Context, enqueue func(ctx context.Context, p redis.Pipeliner)) error {
	op := &batchOp{enqueue: enqueue, deadline: time.Now().Add(b.opTimeout), done: make(chan struct{})}
	select {
	case b.queue <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		return ErrClosed
	}
	select {
	case <-op.done:
		return op.err
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		select {
		case <-op.done:
			return op.err
		default:
			return ErrClosed
		}
	}
}

func (b *batcher) loop() {
	defer close(b.done)
	batch := make([]*batchOp, 0, 64)
	for {
		select {
		case op := <-b.queue:
			batch = append(batch[:0], op)
		case <-b.stop:
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case op := <-b.queue:
				batch = append(batch, op)
			default:
				break drain
			}
		}
		now := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(b.opTimeout))
		pipe := b.client.Pipeline()
		sent := 0
		for _, op := range batch {
			if now.After(op.deadline) {
				op.err = context.DeadlineExceeded
				continue
			}
			op.enqueue(ctx, pipe)
			sent++
		}
		if sent > 0 {
			b.batches.Add(1)
			b.commands.Add(uint64(sent))
			_, _ = pipe.Exec(ctx) // every command carries its own reply or error
		}
		cancel()
		for _, op := range batch {
			close(op.done)
		}
	}
}

// close stops the loop and waits for it; commands still queued answer ErrClosed.
func (b *batcher) close() {
	close(b.stop)
	<-b.done
}
