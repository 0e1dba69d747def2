package claude

import (
	"context"
	"io"
	"sync"
)

// queue hands messages from the reader to the consumer. It never blocks the
// reader: a slow consumer must not stall control routing (a hook waiting on
// a consumer waiting on the hook would deadlock).
type queue struct {
	mu     sync.Mutex
	items  []queued
	err    error
	closed bool
	ready  chan struct{} // one token: "something changed"
}

// queued is one message and, for a result, the barrier it waits behind:
// the consumer gets it only once the mirror has stored what came before.
type queued struct {
	msg  Message
	wait <-chan struct{}
}

func newQueue() *queue { return &queue{ready: make(chan struct{}, 1)} }

func (q *queue) notify() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *queue) push(m Message) { q.pushAfter(m, nil) }

// pushAfter queues m to be delivered once wait is closed (nil: at once).
// Messages behind it wait too, so the order is kept; the reader never waits.
func (q *queue) pushAfter(m Message, wait <-chan struct{}) {
	q.mu.Lock()
	q.items = append(q.items, queued{msg: m, wait: wait})
	q.mu.Unlock()
	q.notify()
}

// finish ends the stream; err (nil for a clean end) follows the last item.
func (q *queue) finish(err error) {
	q.mu.Lock()
	if !q.closed {
		q.closed, q.err = true, err
	}
	q.mu.Unlock()
	q.notify()
}

// pop returns the next message, or io.EOF after a clean end, or the
// stream's error.
func (q *queue) pop(ctx context.Context) (Message, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			head := q.items[0]
			if head.wait != nil {
				q.mu.Unlock()
				select {
				case <-head.wait:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				q.mu.Lock()
				if len(q.items) > 0 && q.items[0].wait == head.wait {
					q.items[0].wait = nil
				}
				q.mu.Unlock()
				continue
			}
			m := head.msg
			q.items[0] = queued{}
			q.items = q.items[1:]
			more := len(q.items) > 0 || q.closed
			q.mu.Unlock()
			if more {
				q.notify()
			}
			return m, nil
		}
		if q.closed {
			err := q.err
			q.mu.Unlock()
			q.notify()
			if err == nil {
				err = io.EOF
			}
			return nil, err
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
