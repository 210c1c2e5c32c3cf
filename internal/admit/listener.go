package admit

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// DefaultMaxConnections bounds open downstream connections when
// LimitListener is given no positive bound.
const DefaultMaxConnections = 4096

// busyResponse is written to a connection over the bound before it closes.
const busyResponse = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 51\r\n\r\n{\"error\":\"busy\",\"message\":\"too many connections\"}\r\n"

// LimitListener returns a listener that holds at most max connections open:
// one accepted beyond that is answered 503 and closed at once, so a flood of
// idle or slow connections cannot pile up.
func LimitListener(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		max = DefaultMaxConnections
	}
	return &limitListener{Listener: ln, slots: make(chan struct{}, max)}
}

type limitListener struct {
	net.Listener
	slots chan struct{}
}

// Accept returns the next connection within the bound.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.slots <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.slots }}, nil
		default:
			_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
			_, _ = c.Write([]byte(busyResponse))
			_ = c.Close()
		}
	}
}

// limitConn gives its place back once, when closed.
type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// CloseWrite ends the wrapped connection's sending side, when it has one,
// so that a server answering before it closes (a refused request) can tell
// the client the answer is complete.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("admit: connection cannot close its sending side alone")
}

// SyscallConn gives the wrapped connection's file descriptor, so that a
// server can wait on it (limitConn only counts closes).
func (c *limitConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.New("admit: connection has no file descriptor")
}
