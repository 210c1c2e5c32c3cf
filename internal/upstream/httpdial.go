package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
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
	parsed *url.URL     // url, parsed once (nil: each request parses it, and fails)
	client *http.Client // carries every request; pooled connections
	creds  *credentials
	// direct is client's transport when it is the gateway's own (NewHTTPClient) and
	// client adds nothing but redirects (no jar, no timeout): requests go to it
	// straight, and only a redirect goes through client (see send).
	direct *h1Transport

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

// newHTTPDialer returns the dialer of an HTTP upstream at rawURL.
func newHTTPDialer(e *env, rawURL string, client *http.Client, creds *credentials) *httpDialer {
	d := &httpDialer{env: e, url: rawURL, client: client, creds: creds}
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		u.Host = strings.TrimSuffix(u.Host, ":") // as NewRequest does: an empty port is none
		d.parsed = u
	}
	// The direct path writes the request itself: a URL's user:password,
	// which http.Client turns into Basic authorization, takes the client's.
	if h1, ok := client.Transport.(*h1Transport); ok && client.Jar == nil && client.Timeout == 0 &&
		(d.parsed == nil || d.parsed.User == nil) {
		d.direct = h1
	}
	return d
}

// newRequest is http.NewRequestWithContext(ctx, method, d.url, body) with
// header h, without parsing the URL again; body may be nil.
func (d *httpDialer) newRequest(ctx context.Context, method string, body []byte, h http.Header) (*http.Request, error) {
	if d.parsed == nil {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, d.url, rd)
		if err == nil {
			req.Header = h
		}
		return req, err
	}
	u := *d.parsed
	req := (&http.Request{Method: method, URL: &u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Host: u.Host}).WithContext(ctx)
	if len(body) > 0 {
		req.ContentLength = int64(len(body))
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	} else if body != nil {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return req, nil
}

// send sends req: straight to the gateway's own transport when client is
// nothing more (http.Client's per-request work, a copy of the headers for
// redirects among it, was a tenth of a call's allocations), through client
// otherwise. A redirect answered on the straight path is followed by an
// http.Client with client's CheckRedirect (no credential to another
// origin) that is handed this answer as its first.
func (d *httpDialer) send(req *http.Request) (*http.Response, error) {
	if d.direct == nil {
		return d.client.Do(req)
	}
	resp, err := d.direct.RoundTrip(req)
	if err != nil || !followed(resp) {
		return resp, err
	}
	c := &http.Client{Transport: &primed{first: resp, rt: d.direct}, CheckRedirect: d.client.CheckRedirect}
	return c.Do(req)
}

// primed is a RoundTripper whose first answer is one already received;
// the next requests go to rt. One http.Client.Do uses it, on one goroutine.
type primed struct {
	first *http.Response
	rt    http.RoundTripper
}

func (p *primed) RoundTrip(req *http.Request) (*http.Response, error) {
	if resp := p.first; resp != nil {
		p.first = nil
		resp.Request = req
		return resp, nil
	}
	return p.rt.RoundTrip(req)
}

// followed reports an answer http.Client follows: a redirect status with a
// Location.
func followed(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return resp.Header.Get("Location") != ""
	}
	return false
}

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
