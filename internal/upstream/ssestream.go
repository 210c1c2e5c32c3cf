package upstream

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/mcpgw/mcpgw/internal/jsonrpc"
)

// decodeEvent decodes one event's data. Shared data (the SSE reader's own
// scratch, see sse.Reader.NextShared) is only looked at: the answer to r
// whose result is r.same byte for byte comes back with r.same as its
// result, so nothing of the scratch is kept; any other message (a changed
// page, a notification, a server→client request) is decoded again from a
// copy of the data, since it outlives the scratch: that second decode is
// the price of a page that changed, which a walk of unchanged pages pays
// for in allocations it no longer makes.
func decodeEvent(data []byte, r *outgoing, shared bool) (*jsonrpc.Message, error) {
	if !shared {
		return jsonrpc.Decode(data)
	}
	m, err := jsonrpc.Decode(data)
	if err == nil && responseTo(m, r.id) && m.Error == nil && bytes.Equal(m.Result, r.same) {
		m.Params, m.Result = nil, r.same // nothing of data is left in m (its ID is a string)
		return m, nil
	}
	return jsonrpc.Decode(bytes.Clone(data))
}

// lazyCancel is a context canceled by stop, made (from parent) only when
// get is first called.
type lazyCancel struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
}

func (l *lazyCancel) get() context.Context {
	if l.ctx == nil {
		l.ctx, l.cancel = context.WithCancel(l.parent)
	}
	return l.ctx
}

func (l *lazyCancel) stop() {
	if l.cancel != nil {
		l.cancel()
	}
}

// drain reads what is left of a response stream (normally just its end,
// which follows the answer at once) so that the connection returns to the
// pool instead of being closed: a stream cut short costs the next request a
// new TCP connection. An upstream that keeps the stream open past its answer
// is cut after streamEndGrace: by the connection's read deadline when raw,
// the body as the transport gave it, is this package's (h1Body), else by a
// timer that closes body.
func drain(body, raw io.ReadCloser) {
	if hb, ok := raw.(*h1Body); ok && hb.endWithin(streamEndGrace) {
		_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
		body.Close()
		return
	}
	timer := time.AfterFunc(streamEndGrace, func() { body.Close() })
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	timer.Stop()
	body.Close()
}
