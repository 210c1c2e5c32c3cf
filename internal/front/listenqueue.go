package front

import (
	"encoding/json"
	"sync"
	"time"
)

// eventQueue holds the events waiting to be written on one listen: at most
// listenQueue, the excess dropped (a stuck listen loses events, never holds
// the upstream). Its storage grows with what is queued and is let go once
// taken, so an idle held stream holds none.
type eventQueue struct {
	mu    sync.Mutex
	evs   []listenEvent
	ready chan struct{} // holds a value while events may be queued
}

func newEventQueue() *eventQueue { return &eventQueue{ready: make(chan struct{}, 1)} }

// push queues an event; it never blocks.
func (q *eventQueue) push(method string, params json.RawMessage) {
	q.mu.Lock()
	if len(q.evs) < listenQueue {
		q.evs = append(q.evs, listenEvent{method: method, params: params, at: time.Now()})
	}
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take returns the events queued, oldest first, and empties the queue.
func (q *eventQueue) take() []listenEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.evs
	q.evs = nil
	return evs
}
