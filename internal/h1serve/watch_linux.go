//go:build linux

package h1serve

import (
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// watcher watches the connections whose handlers run longer than
// watchDelay for their clients leaving, on one goroutine for the whole
// server: an epoll set of their file descriptors, each registered for
// EPOLLRDHUP (the client's FIN; EPOLLHUP and EPOLLERR, a reset, come
// unasked), one-shot. See doc.go.
type watcher struct {
	s    *Server
	epfd int
	evfd int // wakes the loop for new pending requests and for stop

	mu      sync.Mutex
	pending []pending // requests started since the last scans
	// regs are the registered connections by registration key: a 64-bit
	// count of registrations (an event's data), never reused, so an event
	// can name neither another connection nor an earlier registration of
	// the same one (a descriptor number, or a 32-bit id, can wrap).
	regs     map[uint64]*conn
	lastReg  uint64
	sleeping bool // the loop waits with no timeout
	stopped  bool
	done     chan struct{}
}

// pending is a running request not yet watched: seen by one scan, it is
// registered by the next if it still runs, so it ran at least watchDelay.
type pending struct {
	c    *conn
	seq  uint64
	seen bool
}

const evfdID = 0 // registration keys start at 1

func newWatcher(s *Server) (*watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: evfdID}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, err
	}
	w := &watcher{s: s, epfd: epfd, evfd: evfd, regs: map[uint64]*conn{}, done: make(chan struct{})}
	go w.loop()
	return w, nil
}

// add notes that c's request seq started; it reports false when the
// watcher has stopped (shut down, or its loop failed): the request is
// then watched by the fallback.
func (w *watcher) add(c *conn, seq uint64) bool {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return false
	}
	w.pending = append(w.pending, pending{c: c, seq: seq})
	wake := w.sleeping
	w.sleeping = false
	w.mu.Unlock()
	if wake {
		w.wake()
	}
	return true
}

func (w *watcher) wake() {
	one := [8]byte{1}
	_, _ = unix.Write(w.evfd, one[:])
}

// stop ends the loop and closes the epoll set; registrations left end
// with it.
func (w *watcher) stop() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		<-w.done
		return
	}
	w.stopped = true
	w.mu.Unlock()
	w.wake()
	<-w.done
}

func (w *watcher) loop() {
	defer func() {
		if v := recover(); v != nil {
			buf := make([]byte, 16<<10)
			w.s.logf("h1serve: disconnect watcher panicked: %v\n%s", v, buf[:runtime.Stack(buf, false)])
		}
		w.mu.Lock()
		w.stopped = true
		unix.Close(w.epfd)
		unix.Close(w.evfd)
		w.regs = nil
		w.pending = nil
		w.mu.Unlock()
		close(w.done)
	}()
	events := make([]unix.EpollEvent, 64)
	for {
		w.mu.Lock()
		if w.stopped {
			w.mu.Unlock()
			return
		}
		timeout := int(watchDelay.Milliseconds())
		if len(w.pending) == 0 {
			w.sleeping = true
			timeout = -1
		}
		w.mu.Unlock()
		n, err := unix.EpollWait(w.epfd, events, timeout)
		if err != nil && err != unix.EINTR {
			w.s.logf("h1serve: disconnect watcher: %v", err)
			return
		}
		for _, ev := range events[:max(n, 0)] {
			key := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if key == evfdID {
				var b [8]byte
				_, _ = unix.Read(w.evfd, b[:])
				continue
			}
			w.fire(key, ev.Events)
		}
		w.scan()
	}
}

// scan registers the pending requests a previous scan saw that still run,
// and drops those that ended.
func (w *watcher) scan() {
	w.mu.Lock()
	list := w.pending
	w.pending = nil
	w.mu.Unlock()
	keep := list[:0]
	for _, p := range list {
		if !p.seen {
			p.seen = true
			keep = append(keep, p)
			continue
		}
		w.register(p.c, p.seq)
	}
	for i := len(keep); i < len(list); i++ {
		list[i] = pending{}
	}
	if len(keep) == 0 {
		return
	}
	w.mu.Lock()
	if !w.stopped {
		w.pending = append(keep, w.pending...)
	}
	w.mu.Unlock()
}

// register adds c's descriptor to the epoll set if request seq still runs.
func (w *watcher) register(c *conn, seq uint64) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.seq != seq || c.cancel == nil || c.registered || c.closed {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	key := w.lastReg + 1
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: int32(uint32(key)), Pad: int32(uint32(key >> 32))}
	var err error
	if cerr := c.raw.Control(func(fd uintptr) { err = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) }); cerr != nil {
		return
	}
	if err != nil {
		// ENOSPC (fs.epoll.max_user_watches) or ENOMEM: this request is not
		// watched, so a client that leaves is noticed at the next write.
		c.s.logf("h1serve: cannot watch a request for its client leaving: %v", err)
		return
	}
	w.lastReg = key
	c.registered, c.regKey = true, key
	w.regs[key] = c
}

// unregister removes c's descriptor from the epoll set; c.wmu is held.
func (w *watcher) unregister(c *conn) {
	c.registered = false
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	delete(w.regs, c.regKey)
	_ = c.raw.Control(func(fd uintptr) { _ = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
}

// fire handles an event of the registration key names: a reset ends
// its request; a FIN ends it unless a pipelined request waits to be read.
func (w *watcher) fire(key uint64, events uint32) {
	w.mu.Lock()
	c := w.regs[key]
	w.mu.Unlock()
	if c == nil {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if !c.registered || c.regKey != key || c.cancel == nil {
		return
	}
	gone := events&(unix.EPOLLHUP|unix.EPOLLERR) != 0
	if !gone {
		_ = c.raw.Control(func(fd uintptr) {
			var b [1]byte
			n, _, err := unix.Recvfrom(int(fd), b[:], unix.MSG_PEEK|unix.MSG_DONTWAIT)
			gone = err == nil && n == 0 || err != nil && err != unix.EAGAIN && err != unix.EINTR
		})
	}
	if gone {
		c.cancel()
	}
}
