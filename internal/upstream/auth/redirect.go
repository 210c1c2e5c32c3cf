package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// MaxRedirects is how many redirects CheckRedirect follows before stopping
// (net/http's default; httpx's is 20).
const MaxRedirects = 10

// ErrRedirectRefused is returned (wrapped) by CheckRedirect for a redirect
// on which credentials would not survive.
var ErrRedirectRefused = errors.New("redirect refused: credentials would not survive it")

// ErrTooManyRedirects is returned by CheckRedirect after
// MaxRedirects redirects.
var ErrTooManyRedirects = errors.New("stopped after 10 redirects")

// CredentialsSurvive reports whether httpx keeps the Authorization header
// when a request to from is redirected to to: true for the same origin
// (scheme, case-insensitive host, and port with 80/443 defaults filled in)
// and for an http→https upgrade of the same host on the default ports;
// false otherwise, including for nil URLs.
func CredentialsSurvive(from, to *url.URL) bool {
	if from == nil || to == nil {
		return false
	}
	fs, ts := strings.ToLower(from.Scheme), strings.ToLower(to.Scheme)
	if !strings.EqualFold(from.Hostname(), to.Hostname()) {
		return false
	}
	fp, fok := portOrDefault(fs, from.Port())
	tp, tok := portOrDefault(ts, to.Port())
	if !fok || !tok {
		return false
	}
	if fs == ts && fp == tp {
		return true
	}
	return fs == "http" && fp == 80 && ts == "https" && tp == 443
}

// portOrDefault returns the numeric port, filling in 80/443 for http/https,
// or -1 when neither a port nor a known default exists (httpx's None, which
// compares equal to another None). ok is false for an unparsable port.
func portOrDefault(scheme, port string) (int, bool) {
	if port == "" {
		switch scheme {
		case "http":
			return 80, true
		case "https":
			return 443, true
		}
		return -1, true
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0, false
	}
	return int(n), true
}

// CheckRedirect is an http.Client CheckRedirect that refuses any redirect on
// which CredentialsSurvive is false, comparing the new target both with the
// original request (via[0]) and with the hop that redirected (httpx's own
// comparison), and stops after MaxRedirects. A refused redirect is never
// sent, so the destination is not contacted. Errors name origins only,
// never paths or queries.
func CheckRedirect(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	if len(via) >= MaxRedirects {
		return ErrTooManyRedirects
	}
	prev := via[len(via)-1].URL
	if !CredentialsSurvive(via[0].URL, req.URL) || !CredentialsSurvive(prev, req.URL) {
		return fmt.Errorf("%w: %s to %s", ErrRedirectRefused, origin(prev), origin(req.URL))
	}
	return nil
}

// origin renders scheme://host[:port] of u for error messages.
func origin(u *url.URL) string {
	if u == nil {
		return "<nil>"
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
