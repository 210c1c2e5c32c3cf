package e2e

import (
	"bytes"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP traces receiver speaking the real protocol:
// it decodes ExportTraceServiceRequest protobufs POSTed to /v1/traces.
type otlpReceiver struct {
	url string
	mu  sync.Mutex
	// spans is every span received, in arrival order; guarded by mu.
	spans []*tracepb.Span
	// fail makes it answer 503 (an outage); guarded by mu.
	fail bool
}

func startOTLPReceiver(t testing.TB) *otlpReceiver {
	t.Helper()
	rc := &otlpReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/traces" || r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "not an OTLP/HTTP protobuf export", http.StatusBadRequest)
			return
		}
		raw, err := io.ReadAll(r.Body)
		var req collectortrace.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &req)
		}
		if err != nil {
			http.Error(w, "bad protobuf", http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		fail := rc.fail
		if !fail {
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					rc.spans = append(rc.spans, ss.Spans...)
				}
			}
		}
		rc.mu.Unlock()
		if fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	rc.url = srv.URL
	return rc
}

// trace returns the spans of the trace id (hex).
func (rc *otlpReceiver) trace(id string) []*tracepb.Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range rc.spans {
		if hex.EncodeToString(s.TraceId) == id {
			out = append(out, s)
		}
	}
	return out
}

func (rc *otlpReceiver) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.spans)
}

// attrs is a span's attributes as strings (ints formatted).
func attrs(s *tracepb.Span) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes {
		if iv, ok := kv.Value.Value.(*commonpb.AnyValue_IntValue); ok {
			out[kv.Key] = strconv.FormatInt(iv.IntValue, 10)
			continue
		}
		out[kv.Key] = kv.Value.GetStringValue()
	}
	return out
}

// seen is the parent span id a traced upstream received, by trace id: from
// params._meta.traceparent and from the traceparent header.
type seen struct{ meta, header string }

// tracedUpstream is a go-sdk server over streamable HTTP whose tools report
// the trace context each call arrived with, as the upstream's own span
// would take its parent from it.
type tracedUpstream struct {
	url string
	mu  sync.Mutex
	got map[string]seen // trace id → parents seen; guarded by mu
}

func startTracedUpstream(t *testing.T) *tracedUpstream {
	t.Helper()
	up := &tracedUpstream{got: map[string]seen{}}
	srv := sdk.NewServer(&sdk.Implementation{Name: "traced", Version: "1"}, nil)
	srv.AddTool(&sdk.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			metaTP, _ := req.Params.Meta["traceparent"].(string)
			var hdrTP string
			if req.Extra != nil {
				hdrTP = req.Extra.Header.Get("traceparent")
			}
			tid, metaParent := splitTraceparent(metaTP)
			htid, hdrParent := splitTraceparent(hdrTP)
			up.mu.Lock()
			if tid != "" {
				s := up.got[tid]
				s.meta = metaParent
				up.got[tid] = s
			}
			if htid != "" {
				s := up.got[htid]
				s.header = hdrParent
				up.got[htid] = s
			}
			up.mu.Unlock()
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
	srv.AddTool(&sdk.Tool{Name: "broken", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{}, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"name":"broken"`)) {
			// A fault a real server does not produce on demand: the call is
			// refused at the HTTP layer.
			http.Error(w, "unavailable", http.StatusServiceUnavailable)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	up.url = hs.URL + "/mcp"
	return up
}

func (up *tracedUpstream) parents(traceID string) seen {
	up.mu.Lock()
	defer up.mu.Unlock()
	return up.got[traceID]
}

// splitTraceparent returns the trace id and parent id of a W3C traceparent.
func splitTraceparent(tp string) (traceID, parent string) {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 {
		return "", ""
	}
	return parts[1], parts[2]
}
