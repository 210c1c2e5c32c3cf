package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// seedCaller is a modern caller: the TS SDK v2 client pinned to 2026-07-28
// (test/clients/listen.mjs) driven over stdin/stdout JSON lines, like the
// seed's ClientSession with its listen() helper.
type seedCaller struct {
	t     *testing.T
	stdin io.WriteCloser

	mu      sync.Mutex
	next    int
	pending map[string]chan callerReply

	events chan callerEvent
}

// callerReply answers one command.
type callerReply struct {
	Result json.RawMessage `json:"result"`
	Error  string          `json:"error"`
	Code   any             `json:"code"`
}

// callerEvent is an asynchronous line: a notification or the subscription's end.
type callerEvent struct {
	Event  string         `json:"event"`
	Method string         `json:"method"`
	Params map[string]any `json:"params"`
	How    string         `json:"how"`
}

// startSeedCaller connects listen.mjs to url with headers; it exits at the end of the test.
func startSeedCaller(t *testing.T, url string, headers map[string]string) *seedCaller {
	t.Helper()
	node, dir := tsClients(t)
	hdr, _ := json.Marshal(headers)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, node, "listen.mjs", url, string(hdr))
	cmd.Dir = dir
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedTail{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &seedCaller{t: t, stdin: stdin, pending: map[string]chan callerReply{}, events: make(chan callerEvent, 64)}
	first := make(chan map[string]json.RawMessage, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.read(stdout, first)
	}()
	t.Cleanup(func() {
		_, _ = io.WriteString(stdin, `{"id":"exit","cmd":"exit"}`+"\n")
		_ = stdin.Close()
		timer := time.AfterFunc(10*time.Second, cancel)
		_ = cmd.Wait()
		timer.Stop()
		cancel()
		<-done
		if t.Failed() {
			t.Logf("listen.mjs stderr:\n%s", stderr.String())
		}
	})
	select {
	case line, ok := <-first:
		var event string
		_ = json.Unmarshal(line["event"], &event)
		if !ok || event != "connected" {
			t.Fatalf("listen.mjs did not connect: %s %s", line["error"], stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("listen.mjs did not connect within 30 s: %s", stderr.String())
	}
	return c
}

// read dispatches stdout lines: the first to first, answers to their
// command, the rest to events.
func (c *seedCaller) read(stdout io.Reader, first chan<- map[string]json.RawMessage) {
	defer close(c.events)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	started := false
	for sc.Scan() {
		var line map[string]json.RawMessage
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		if !started {
			started = true
			first <- line
			continue
		}
		if raw, ok := line["id"]; ok {
			var id string
			_ = json.Unmarshal(raw, &id)
			var reply callerReply
			_ = json.Unmarshal(sc.Bytes(), &reply)
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- reply
			}
			continue
		}
		var ev callerEvent
		_ = json.Unmarshal(sc.Bytes(), &ev)
		select {
		case c.events <- ev:
		default: // a flood of events is a failure the test sees as missing ones
		}
	}
	if !started {
		close(first)
	}
}

// do sends cmd and waits for its answer up to within.
func (c *seedCaller) do(cmd map[string]any, within time.Duration) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := fmt.Sprint(c.next)
	ch := make(chan callerReply, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	cmd["id"] = id
	line, _ := json.Marshal(cmd)
	if _, err := c.stdin.Write(append(line, '\n')); err != nil {
		return nil, fmt.Errorf("listen.mjs %s: %w", cmd["cmd"], err)
	}
	select {
	case r := <-ch:
		if r.Error != "" {
			return nil, fmt.Errorf("listen.mjs %s: %s (code %v)", cmd["cmd"], r.Error, r.Code)
		}
		return r.Result, nil
	case <-time.After(within):
		return nil, fmt.Errorf("listen.mjs %s: no answer within %s", cmd["cmd"], within)
	}
}

// seedDiscover is the part of a DiscoverResult the seed checks.
type seedDiscover struct {
	Capabilities struct {
		Tools *struct {
			ListChanged bool `json:"listChanged"`
		} `json:"tools"`
		Resources *struct {
			ListChanged bool `json:"listChanged"`
			Subscribe   bool `json:"subscribe"`
		} `json:"resources"`
	} `json:"capabilities"`
}

func (d seedDiscover) toolsListChanged() bool {
	return d.Capabilities.Tools != nil && d.Capabilities.Tools.ListChanged
}

func (d seedDiscover) resourcesListChanged() bool {
	return d.Capabilities.Resources != nil && d.Capabilities.Resources.ListChanged
}

func (d seedDiscover) resourcesSubscribe() bool {
	return d.Capabilities.Resources != nil && d.Capabilities.Resources.Subscribe
}

// discoverWithin sends server/discover and decodes its result.
func (c *seedCaller) discoverWithin(within time.Duration) (seedDiscover, error) {
	raw, err := c.do(map[string]any{"cmd": "discover", "timeoutMs": within.Milliseconds()}, within+time.Second)
	var d seedDiscover
	if err == nil {
		err = json.Unmarshal(raw, &d)
	}
	return d, err
}

// seedList is a tools, prompts or resources listing.
type seedList struct {
	Tools      []struct{ Name string } `json:"tools"`
	Prompts    []struct{ Name string } `json:"prompts"`
	Resources  []struct{ URI string }  `json:"resources"`
	NextCursor string                  `json:"nextCursor"`
}

// names is the tool or prompt names, or the resource URIs, listed.
func (l seedList) names() map[string]bool {
	out := map[string]bool{}
	for _, x := range l.Tools {
		out[x.Name] = true
	}
	for _, x := range l.Prompts {
		out[x.Name] = true
	}
	for _, x := range l.Resources {
		out[x.URI] = true
	}
	return out
}

// list lists what (tools, prompts or resources) from cursor.
func (c *seedCaller) list(what, cursor string) (seedList, error) {
	cmd := map[string]any{"cmd": "list", "what": what}
	if cursor != "" {
		cmd["cursor"] = cursor
	}
	raw, err := c.do(cmd, 30*time.Second)
	var l seedList
	if err == nil {
		err = json.Unmarshal(raw, &l)
	}
	return l, err
}

// mustList lists what, failing the test on error.
func (c *seedCaller) mustList(what string) map[string]bool {
	c.t.Helper()
	l, err := c.list(what, "")
	if err != nil {
		c.t.Fatal(err)
	}
	return l.names()
}

// seedHonored is the ack's honored filter.
type seedHonored struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
}

// listen opens subscriptions/listen with filter and returns what the ack honored.
func (c *seedCaller) listen(filter map[string]any) (seedHonored, error) {
	raw, err := c.do(map[string]any{"cmd": "listen", "filter": filter}, 30*time.Second)
	var out struct {
		Honored seedHonored `json:"honored"`
	}
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	return out.Honored, err
}

// leave closes the subscription (sub.close()).
func (c *seedCaller) leave() error {
	_, err := c.do(map[string]any{"cmd": "close"}, 10*time.Second)
	return err
}

// nextEvent is the next asynchronous event within the given time.
func (c *seedCaller) nextEvent(within time.Duration) (callerEvent, error) {
	select {
	case ev, ok := <-c.events:
		if !ok {
			return callerEvent{}, errors.New("listen.mjs exited")
		}
		return ev, nil
	case <-time.After(within):
		return callerEvent{}, errTimeout
	}
}

var errTimeout = errors.New("timed out")

// lockedTail keeps the last 64 KiB written to it.
type lockedTail struct {
	mu  sync.Mutex
	buf []byte
}

func (l *lockedTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > 64<<10 {
		l.buf = l.buf[len(l.buf)-64<<10:]
	}
	return len(p), nil
}

func (l *lockedTail) String() string { l.mu.Lock(); defer l.mu.Unlock(); return string(l.buf) }
