package upstream

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
	"github.com/mcpgw/mcpgw/internal/sse"
)

// sseTransport is the legacy HTTP+SSE transport (2024-11-05): one GET stream
// carries every server message; each client message is a POST to the URL the
// stream announced in its first, "endpoint", event.
type sseTransport struct {
	*mux
	hdr      headerFunc
	endpoint string
	body     io.ReadCloser
	readDone chan struct{}
}

// startSSE opens the stream and waits (within ctx) for the endpoint event.
func startSSE(ctx context.Context, c *Client, hdr headerFunc) (*sseTransport, error) {
	t := &sseTransport{hdr: hdr, readDone: make(chan struct{})}
	t.mux = newMux(c, t.post)
	req, err := http.NewRequestWithContext(t.mux.ctx, http.MethodGet, c.cfg.URL, nil)
	if err != nil {
		return nil, err
	}
	if req.Header, _, err = hdr(ctx); err != nil {
		t.fail(err)
		return nil, err
	}
	req.Header.Set("Accept", "text/event-stream")
	type opened struct {
		resp *http.Response
		err  error
	}
	ch := make(chan opened, 1)
	go func() {
		resp, err := c.cfg.HTTPClient.Do(req)
		ch <- opened{resp, err}
	}()
	var resp *http.Response
	select {
	case o := <-ch:
		if o.err != nil {
			t.fail(connErr("cannot reach upstream", o.err))
			return nil, connErr("cannot reach upstream", o.err)
		}
		resp = o.resp
	case <-ctx.Done():
		t.fail(ctx.Err())
		if o := <-ch; o.resp != nil {
			o.resp.Body.Close()
		}
		return nil, ctx.Err()
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.fail(&StatusError{Status: resp.StatusCode})
		return nil, &StatusError{Status: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate")}
	}
	if mediaType(resp) != "text/event-stream" {
		resp.Body.Close()
		t.fail(protoErr("unsupported content type from upstream", nil))
		return nil, t.doneErr
	}
	t.body = resp.Body
	endpoint := make(chan string, 1)
	go t.readLoop(endpoint)
	select {
	case ep := <-endpoint:
		u, err := resolveEndpoint(c.cfg.URL, ep)
		if err != nil {
			t.stop()
			return nil, err
		}
		t.endpoint = u
		return t, nil
	case <-t.done:
		t.stop()
		return nil, t.doneErr
	case <-ctx.Done():
		t.stop()
		return nil, ctx.Err()
	}
}

// resolveEndpoint resolves the announced POST URL against the stream URL and
// refuses one on another origin: credentials must not follow it there.
func resolveEndpoint(base, announced string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	ref, err := url.Parse(strings.TrimSpace(announced))
	if err != nil {
		return "", protoErr("invalid MCP response: malformed endpoint event", nil)
	}
	u := b.ResolveReference(ref)
	if !sameOrigin(u, b) {
		return "", protoErr("upstream announced a message endpoint on another origin; refused", nil)
	}
	return u.String(), nil
}

func (t *sseTransport) readLoop(endpoint chan<- string) {
	defer close(t.readDone)
	rd := sse.NewReader(t.body, int(t.c.cfg.MaxMessageBytes))
	announced := false
	for {
		ev, err := rd.Next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				t.fail(connErr("SSE stream ended", nil))
			case errors.Is(err, sse.ErrEventTooLarge):
				t.fail(protoErr("invalid MCP response: message too large", nil))
			default:
				t.fail(connErr("connection was closed", err))
			}
			return
		}
		switch ev.Type {
		case "endpoint":
			if !announced {
				announced = true
				endpoint <- string(ev.Data)
			}
		case "", "message":
			if len(bytes.TrimSpace(ev.Data)) == 0 {
				continue
			}
			if !announced {
				t.fail(protoErr("invalid MCP response: stream did not start with an endpoint event", nil))
				return
			}
			msg, err := jsonrpc.Decode(ev.Data)
			if err != nil {
				t.c.cfg.Logger.Warn("upstream sent an event that is not a JSON-RPC message", "bytes", len(ev.Data))
				continue
			}
			t.dispatch(msg)
		}
	}
}

func (t *sseTransport) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return err
	}
	if req.Header, _, err = t.hdr(ctx); err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.c.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return connErr("cannot reach upstream", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		if resp.StatusCode == http.StatusNotFound {
			t.fail(&RPCError{Err: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "Session terminated"}, HTTPStatus: 404})
		}
		return &StatusError{Status: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate")}
	}
	return nil
}

func (t *sseTransport) expired() bool { return t.dead() }

// stop ends the stream and waits for its reader.
func (t *sseTransport) stop() {
	t.fail(connErr("upstream connection closed by the gateway", nil))
	if t.body != nil {
		t.body.Close()
		<-t.readDone
	}
	t.serving.Wait()
}

func (t *sseTransport) close(context.Context) error {
	t.stop()
	return nil
}
