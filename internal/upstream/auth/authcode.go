package auth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcpgw/mcpgw/internal/asciifold"
	"golang.org/x/net/http/httpguts"
)

// UserToken is a token set an authorization-code or refresh-token grant
// returned for one user: the access token, the refresh token ("" when none
// was issued) and when the access token should be renewed and expires (both
// zero when the answer named no lifetime).
type UserToken struct {
	Access, Refresh         string
	Issued, RenewAt, Expiry time.Time
}

// Refused reports whether err is the token endpoint refusing the grant
// (HTTP 400, 401 or 403: invalid_grant, a revoked refresh token, a client
// that lost its registration): the grant will not work again, so whatever
// depends on it is lost. Transport failures and 5xx answers are not.
func Refused(err error) bool {
	var te *TokenError
	if !errors.As(err, &te) {
		return false
	}
	return te.StatusCode == http.StatusBadRequest || te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden
}

// GrantToken posts one token request (form, with client_secret_post
// credentials already in it) to tokenURL and parses the answer with the
// rules of the client-credentials cache: redirects are not followed (the
// form carries secrets), the answer is read up to 1 MiB, a refusal is a
// *TokenError naming the HTTP status and the RFC 6749 error code only, and
// no error text carries secret (the client secret, code or refresh token).
// A refresh answer without a refresh_token keeps refresh (RFC 6749 §6).
func GrantToken(ctx context.Context, client *http.Client, tokenURL string, form url.Values, secret, refresh string) (UserToken, error) {
	if client == nil {
		client = http.DefaultClient
	}
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	issued := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, tokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return UserToken{}, redact(fmt.Errorf("oauth2 authorization_code: %w", err), secret)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := noRedirect.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return UserToken{}, redact(fmt.Errorf("oauth2 authorization_code: token request failed: %w", err), secret)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil {
		return UserToken{}, redact(fmt.Errorf("oauth2 authorization_code: reading token response: %w", err), secret)
	}
	fields, parsed := parseTokenBody(resp.Header.Get("Content-Type"), body)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return UserToken{}, &TokenError{StatusCode: resp.StatusCode, Code: safeErrorCode(fields.errCode, secret)}
	}
	switch {
	case len(body) > maxTokenResponse || !parsed:
		return UserToken{}, fmt.Errorf("%w: unparsable body (HTTP %d)", ErrMalformedTokenResponse, resp.StatusCode)
	case fields.access == "" && fields.errCode != "":
		return UserToken{}, &TokenError{StatusCode: resp.StatusCode, Code: safeErrorCode(fields.errCode, secret)}
	case fields.access == "":
		return UserToken{}, fmt.Errorf("%w: no access_token", ErrMalformedTokenResponse)
	case fields.tokenType != "" && !asciifold.Equal(fields.tokenType, "bearer"):
		return UserToken{}, fmt.Errorf("%w: token_type is not bearer", ErrMalformedTokenResponse)
	case !httpguts.ValidHeaderFieldValue(fields.access):
		return UserToken{}, fmt.Errorf("%w: access_token has control characters", ErrMalformedTokenResponse)
	}
	t := UserToken{Access: fields.access, Refresh: fields.refresh, Issued: issued}
	if t.Refresh == "" {
		t.Refresh = refresh
	}
	t.RenewAt, t.Expiry = renewalTimes(issued, lifetime(fields.expiresIn))
	return t, nil
}
