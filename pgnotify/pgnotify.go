// Package pgnotify fans Postgres NOTIFY messages out to in-process
// subscribers over one LISTEN connection per process. It is how replicas
// learn of revoked keys, schema activations and new events without sharing
// memory.
package pgnotify

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/lib/pq"
)

// Handler receives a notification payload.
type Handler func(payload string)

// Hub owns one LISTEN connection.
type Hub struct {
	log      *slog.Logger
	listener *pq.Listener

	mu          sync.RWMutex
	handlers    map[string][]Handler
	onReconnect []func()
}

// New connects a listener to url. Call Run to start dispatching.
func New(url string, log *slog.Logger) *Hub {
	h := &Hub{log: log, handlers: map[string][]Handler{}}
	h.listener = pq.NewListener(url, 200*time.Millisecond, 10*time.Second, h.event)
	return h
}

func (h *Hub) event(ev pq.ListenerEventType, err error) {
	switch ev {
	case pq.ListenerEventReconnected:
		// Notifications may have been missed while disconnected: every
		// subscriber must drop what it cached.
		h.mu.RLock()
		fns := append([]func(){}, h.onReconnect...)
		h.mu.RUnlock()
		for _, fn := range fns {
			fn()
		}
		h.log.Warn("pgnotify: reconnected")
	case pq.ListenerEventConnectionAttemptFailed, pq.ListenerEventDisconnected:
		h.log.Warn("pgnotify: connection problem", "err", err)
	}
}

// Subscribe registers fn for channel and LISTENs to it.
func (h *Hub) Subscribe(channel string, fn Handler) error {
	h.mu.Lock()
	_, listening := h.handlers[channel]
	h.handlers[channel] = append(h.handlers[channel], fn)
	h.mu.Unlock()
	if listening {
		return nil
	}
	return h.listener.Listen(channel)
}

// OnReconnect registers fn to run after the connection was re-established.
func (h *Hub) OnReconnect(fn func()) {
	h.mu.Lock()
	h.onReconnect = append(h.onReconnect, fn)
	h.mu.Unlock()
}

// Run dispatches notifications until ctx ends, then closes the listener.
func (h *Hub) Run(ctx context.Context) {
	defer h.listener.Close()
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-h.listener.Notify:
			if n == nil { // reconnected; handled in event
				continue
			}
			h.mu.RLock()
			fns := h.handlers[n.Channel]
			h.mu.RUnlock()
			for _, fn := range fns {
				fn(n.Extra)
			}
		case <-ping.C:
			_ = h.listener.Ping()
		}
	}
}
