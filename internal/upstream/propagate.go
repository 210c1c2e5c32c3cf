package upstream

import (
	"context"
	"net/http"
)

type headerKey struct{}

// WithHeader returns ctx carrying h, headers every HTTP request sent upstream
// on behalf of ctx's call adds (W3C trace context, say); they override none
// of the session's own headers. Stdio upstreams ignore them.
func WithHeader(ctx context.Context, h http.Header) context.Context {
	if len(h) == 0 {
		return ctx
	}
	return context.WithValue(ctx, headerKey{}, h)
}

// addHeaders adds the headers ctx carries (WithHeader) to h, where h has
// none of that name yet.
func addHeaders(ctx context.Context, h http.Header) {
	extra, _ := ctx.Value(headerKey{}).(http.Header)
	for k, v := range extra {
		if _, ok := h[k]; !ok {
			h[k] = v
		}
	}
}
