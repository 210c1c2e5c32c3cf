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
	d        *httpDialer
	hdr      headerFunc
	endpoint string
	body     io.ReadCloser
	readDone chan struct{}
}

// startSSE opens the stream and waits (within ctx) for the endpoint event.
func startSSE(ctx context.Context, d *httpDialer, p peer) (*sseTransport, error) {
	t := &sseTransport{d: d, hdr: p.hdr, readDone: make(chan struct{})}
	t.mux = newMux(d.env, p.notify, t.post)
	resp, err := t.open(ctx)
	if err != nil {
		t.fail(err)
		return nil, err
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
		u, err := resolveEndpoint(d.url, ep)
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

// open sends the GET that starts the stream and returns its 200 answer. A
// minted token the upstream refuses (401) is refreshed once and the GET
// retried once, as for every other request.
func (t *sseTransport) open(ctx context.Context) (*http.Response, error) {
	for retried := false; ; retried = true {
		resp, minted, err := t.get(ctx)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode == http.StatusOK {
			return resp, nil
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusUnauthorized && minted != "" && !retried {
			t.d.creds.refused(minted)
			continue
		}
		return nil, &StatusError{Status: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate"), minted: minted}
	}
}

// get sends one GET for the stream. The request lives as long as the
// stream (the mux's context); ctx bounds only the wait for its answer.
func (t *sseTransport) get(ctx context.Context) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(t.mux.ctx, http.MethodGet, t.d.url, nil)
	if err != nil {
		return nil, "", badURL()
	}
	h, minted, err := t.hdr(ctx)
	if err != nil {
		return nil, "", err
	}
	req.Header = h
	req.Header.Set("Accept", "text/event-stream")
	type opened struct {
		resp *http.Response
		err  error
	}
	ch := make(chan opened, 1)
	go func() {
		defer t.env.recoverPanic("SSE stream open", func() { ch <- opened{nil, errors.New("internal error")} })
		resp, err := t.d.client.Do(req)
		ch <- opened{resp, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			return nil, "", connErr("cannot reach upstream", o.err)
		}
		return o.resp, minted, nil
	case <-ctx.Done():
		t.fail(ctx.Err()) // cancels the request
		if o := <-ch; o.resp != nil {
			o.resp.Body.Close()
		}
		return nil, "", ctx.Err()
	}
}

// resolveEndpoint resolves the announced POST URL against the stream URL and
// refuses one on another origin: credentials must not follow it there.
func resolveEndpoint(base, announced string) (string, error) {
	b, err := url.Parse(base)
	if err != nil {
		return "", badURL()
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
	defer t.env.recoverPanic("SSE stream reader", func() { t.fail(connErr("upstream connection failed in the gateway", nil)) })
	br := t.env.budgetReader(t.mux.ctx, t.body)
	defer br.releaseHeld()
	rd := sse.NewReader(br, int(t.env.maxMessage))
	announced := false
	for ; ; br.releaseHeld() {
		ev, err := rd.Next()
		if err != nil {
			switch {
			case errors.As(err, new(*BudgetError)):
				t.fail(&BudgetError{})
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
				t.env.msgWarn("upstream sent an event that is not a JSON-RPC message", "bytes", len(ev.Data))
				continue
			}
			t.dispatch(msg)
		}
	}
}

func (t *sseTransport) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.endpoint, bytes.NewReader(body))
	if err != nil {
		return badURL()
	}
	h, minted, err := t.hdr(ctx)
	if err != nil {
		return err
	}
	req.Header = h
	addHeaders(ctx, req.Header)
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.d.client.Do(req)
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
		// The minted token goes with a refusal, so that a 401 refreshes it
		// once and the request is retried once.
		return &StatusError{Status: resp.StatusCode, Challenge: resp.Header.Get("WWW-Authenticate"), minted: minted}
	}
	return nil
}

func (t *sseTransport) expired() bool { return t.dead() }

// standing is true: the stream is the session, and the upstream keeps its
// listeners as long as it is open.
func (t *sseTransport) standing() bool { return true }

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
