package auth

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestCredentialsSurvive is the redirect table (which redirects keep the
// caller's credentials) plus edge cases.
func TestCredentialsSurvive(t *testing.T) {
	cases := []struct {
		from, to string
		keep     bool
	}{
		{"https://upstream.example.com/mcp", "https://upstream.example.com/other", true},       // same origin
		{"https://upstream.example.com/mcp", "https://upstream.example.com:443/other", true},   // explicit default port
		{"https://upstream.example.com/mcp", "https://attacker.example.com/collect", false},    // different host
		{"https://upstream.example.com/mcp", "http://upstream.example.com/collect", false},     // scheme downgrade
		{"https://upstream.example.com/mcp", "https://upstream.example.com:8443/other", false}, // different port
		{"https://upstream.example.com/mcp", "https://sub.upstream.example.com/x", false},      // subdomain
		{"http://upstream.example.com/mcp", "https://upstream.example.com/other", true},        // http -> https upgrade
		{"http://upstream.example.com/mcp", "http://upstream.example.com/other", true},         // same origin, plain http
		// edge cases
		{"https://Upstream.Example.com/mcp", "HTTPS://upstream.example.COM/x", true},
		{"http://upstream.example.com:80/mcp", "https://upstream.example.com:443/x", true},
		{"http://upstream.example.com:8080/mcp", "https://upstream.example.com/x", false},
		{"http://upstream.example.com/mcp", "https://upstream.example.com:8443/x", false},
		{"http://upstream.example.com:8080/a", "http://upstream.example.com:8080/b", true},
		{"https://upstream.example.com/a", "https://upstream.example.com:0443/b", true},
		{"https://[::1]:8443/a", "https://[::1]:8443/b", true},
		{"https://user:pw@upstream.example.com/a", "https://upstream.example.com/b", true},
		{"http://upstream.example.com/a", "http://upstream.example.com./b", false},
	}
	for _, tc := range cases {
		if got := CredentialsSurvive(mustURL(t, tc.from), mustURL(t, tc.to)); got != tc.keep {
			t.Errorf("CredentialsSurvive(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.keep)
		}
	}
	if CredentialsSurvive(nil, mustURL(t, "https://a/")) || CredentialsSurvive(mustURL(t, "https://a/"), nil) {
		t.Error("nil URL must not keep credentials")
	}
}

// TestCheckRedirectTable runs CheckRedirect over the same cases, as one hop.
func TestCheckRedirectTable(t *testing.T) {
	cases := []struct {
		from, to string
		ok       bool
	}{
		{"https://upstream.example.com/mcp", "https://upstream.example.com:443/other", true},
		{"https://upstream.example.com/mcp", "https://attacker.example.com/collect?k=v", false},
		{"http://upstream.example.com/mcp", "https://upstream.example.com/other", true},
	}
	for _, tc := range cases {
		via := []*http.Request{{URL: mustURL(t, tc.from)}}
		err := CheckRedirect(&http.Request{URL: mustURL(t, tc.to)}, via)
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, ErrRedirectRefused)) {
			t.Errorf("%s -> %s: err = %v", tc.from, tc.to, err)
		}
		if err != nil && strings.Contains(err.Error(), "collect") {
			t.Errorf("error names a path: %v", err)
		}
	}
	// An upgrade followed by a downgrade: each hop is compared with the
	// original and with the hop before it, so the downgrade is refused even
	// though it returns to the original origin.
	via := []*http.Request{
		{URL: mustURL(t, "http://upstream.example.com/a")},
		{URL: mustURL(t, "https://upstream.example.com/b")},
	}
	if err := CheckRedirect(&http.Request{URL: mustURL(t, "http://upstream.example.com/c")}, via); !errors.Is(err, ErrRedirectRefused) {
		t.Errorf("upgrade then downgrade: err = %v", err)
	}
	if err := CheckRedirect(&http.Request{URL: mustURL(t, "https://x/")}, nil); err != nil {
		t.Errorf("no via: %v", err)
	}
}

// TestCheckRedirectSameOriginFollowed mirrors
// test_sdk_same_origin_redirect_lists_and_calls_tools: the 307 is followed,
// body and custom credential header intact.
func TestCheckRedirectSameOriginFollowed(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path == "/mcp" {
			http.Redirect(w, r, "/final/mcp", http.StatusTemporaryRedirect)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if r.Header.Get("X-Upstream-Token") != "Bearer synthetic-token" || string(body) != `{"m":1}` || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: CheckRedirect}
	defer client.CloseIdleConnections()

	p := mustPolicy(t, PolicyConfig{AuthType: AuthBearerToken, AuthValue: "synthetic-token", HeaderName: "x-upstream-token"})
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(`{"m":1}`))
	p.Apply(req.Header, nil, "")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || hits.Load() != 2 || resp.Request.URL.Path != "/final/mcp" {
		t.Fatalf("status %d, hits %d, final %s", resp.StatusCode, hits.Load(), resp.Request.URL)
	}
}

// TestCheckRedirectCrossOriginNeverContactsDestination mirrors
// test_sdk_cross_origin_redirect_never_contacts_destination.
func TestCheckRedirectCrossOriginNeverContactsDestination(t *testing.T) {
	var destHits, srcHits atomic.Int32
	dest := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		destHits.Add(1)
	}))
	defer dest.Close()
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srcHits.Add(1)
		if r.Header.Get("X-Upstream-Token") != "Bearer synthetic-token" {
			t.Errorf("first request lacks the credential")
		}
		http.Redirect(w, r, dest.URL+"/collect?secret=1", http.StatusTemporaryRedirect)
	}))
	defer src.Close()
	client := &http.Client{CheckRedirect: CheckRedirect}
	defer client.CloseIdleConnections()

	req, _ := http.NewRequest(http.MethodPost, src.URL+"/mcp", strings.NewReader("{}"))
	req.Header.Set("X-Upstream-Token", "Bearer synthetic-token")
	resp, err := client.Do(req)
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrRedirectRefused) {
		t.Fatalf("err = %v, want ErrRedirectRefused", err)
	}
	// net/http's *url.Error names the URL; our own error names origins only.
	var ue *url.Error
	if !errors.As(err, &ue) || strings.Contains(ue.Err.Error(), "collect") || strings.Contains(ue.Err.Error(), "secret") {
		t.Errorf("CheckRedirect's error leaks the location path: %v", err)
	}
	if srcHits.Load() != 1 || destHits.Load() != 0 {
		t.Fatalf("source hits %d, destination hits %d", srcHits.Load(), destHits.Load())
	}
}

func TestCheckRedirectStopsAfterTen(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/again", http.StatusFound)
	}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: CheckRedirect}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL + "/start")
	if resp != nil {
		resp.Body.Close()
	}
	if !errors.Is(err, ErrTooManyRedirects) || hits.Load() != MaxRedirects {
		t.Fatalf("err = %v, hits = %d", err, hits.Load())
	}
}

func TestScrubRedirect(t *testing.T) {
	from := mustURL(t, "https://upstream.example.com/mcp")
	mk := func(target string) *http.Request {
		return &http.Request{URL: mustURL(t, target), Header: http.Header{
			"Authorization": {"Bearer AUTH"}, "Esb-Oauth": {"Bearer ESB"}, "X-Api-Key": {"k"}, "X-Trace": {"t"},
		}}
	}
	req := mk("https://attacker.example.com/collect")
	if !ScrubRedirect(req, from, "esb-oauth") || len(req.Header) != 1 || req.Header.Get("X-Trace") != "t" {
		t.Fatalf("cross-origin: %v", req.Header)
	}
	req = mk("https://upstream.example.com:443/other")
	if ScrubRedirect(req, from, "esb-oauth") || len(req.Header) != 4 {
		t.Fatalf("same origin: %v", req.Header)
	}
}
