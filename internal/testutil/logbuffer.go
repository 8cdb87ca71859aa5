package testutil

import (
	"bytes"
	"sync"
)

// LogBuffer collects what a logger writes from any goroutine (a server's, a turn's) while
// the test reads it: a bytes.Buffer behind a mutex. The zero value is empty and ready.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
