package upstream

import (
	"context"
	"net/http"
	"sync"

	"github.com/mcpgw/mcpgw/internal/upstream/auth"
)

// credentials writes the credential and the static headers of every HTTP
// request to the upstream: the caller's delegated token, a minted one or
// the configured value, by the server's policy.
type credentials struct {
	policy *auth.Policy
	mint   *auth.ClientCredentials // nil for static credentials
}

// headers computes one request's headers from the per-caller headers and
// token (see headerFunc).
func (cr *credentials) headers(ctx context.Context, injected http.Header, token string) (http.Header, string, error) {
	minted := ""
	if token == "" && cr.mint != nil {
		t, err := cr.mint.Token(ctx)
		if err != nil {
			return nil, "", connErr("could not obtain the upstream credential", err)
		}
		token, minted = t, t
	}
	h := make(http.Header, 8)
	cr.policy.Apply(h, injected, token)
	return h, minted, nil
}

// refused drops a minted token the upstream refused (401), so the next
// request mints a new one.
func (cr *credentials) refused(minted string) {
	if cr.mint != nil && minted != "" {
		cr.mint.Invalidate(minted)
	}
}

// httpDialer opens the transports of an HTTP upstream: streamable HTTP,
// or legacy HTTP+SSE for a session that speaks it.
type httpDialer struct {
	env    *env
	url    string
	client *http.Client // carries every request; pooled connections
	creds  *credentials

	freshOnce sync.Once
	fresh     *http.Client // see freshHTTP
}

func (d *httpDialer) dial(ctx context.Context, v verdict, p peer, _ bool) (transport, error) {
	if v != verdictSSE {
		return &httpTransport{env: d.env, d: d, hdr: p.hdr, cred: p.notify, keepStream: p.owned}, nil
	}
	sctx, cancel := context.WithTimeout(ctx, d.env.requestTimeout)
	defer cancel()
	t, err := startSSE(sctx, d, p)
	if err != nil {
		if ctx.Err() == nil && sctx.Err() != nil {
			return nil, d.env.timedOut("SSE stream", d.env.requestTimeout)
		}
		return nil, err
	}
	return t, nil
}

func (d *httpDialer) answered() {}

// freshHTTP returns a client that opens a new connection for every request,
// for cleanup that must not wait behind a connection the abandoned request
// may still hold.
func (d *httpDialer) freshHTTP() *http.Client {
	d.freshOnce.Do(func() {
		d.fresh = d.client
		switch tr := d.client.Transport.(type) {
		case *http.Transport:
			ft := tr.Clone()
			ft.DisableKeepAlives = true
			d.fresh = &http.Client{Transport: ft, CheckRedirect: d.client.CheckRedirect}
		case *h1Transport:
			d.fresh = &http.Client{Transport: tr.fresh(), CheckRedirect: d.client.CheckRedirect}
		}
	})
	return d.fresh
}
