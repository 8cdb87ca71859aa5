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
// load the next batch gathers while one is on the wire. Each caller still waits only
// until its own deadline: a command whose caller gave up may still run (as with a
// timeout on a plain call).
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
	enqueue func(ctx context.Context, p redis.Pipeliner) // adds the command to p
	done    chan struct{}                                // closed when the reply (or an error) is in
}

func newBatcher(client *redis.Client, opTimeout time.Duration) *batcher {
	b := &batcher{client: client, opTimeout: opTimeout, queue: make(chan *batchOp, batchQueue),
		stop: make(chan struct{}), done: make(chan struct{})}
	go b.loop() // exits when close is called
	return b
}

// do runs one command in the next batch and waits for it until ctx is done. enqueue adds
// the command to the pipeline and keeps the *Cmd it returns; read it after do returns
// nil. After close it returns ErrClosed.
func (b *batcher) do(ctx context.Context, enqueue func(ctx context.Context, p redis.Pipeliner)) error {
	op := &batchOp{enqueue: enqueue, done: make(chan struct{})}
	select {
	case b.queue <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-b.stop:
		return ErrClosed
	}
	select {
	case <-op.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.done:
		select {
		case <-op.done:
			return nil
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
		ctx, cancel := context.WithTimeout(context.Background(), b.opTimeout)
		pipe := b.client.Pipeline()
		for _, op := range batch {
			op.enqueue(ctx, pipe)
		}
		_, _ = pipe.Exec(ctx) // every command carries its own reply or error
		b.batches.Add(1)
		b.commands.Add(uint64(len(batch)))
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
