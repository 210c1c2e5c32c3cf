package identity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"
)

// maxWebhookBody caps the identity document read from the webhook.
const maxWebhookBody = 1 << 20

// webhookRequest is the JSON posted to custom_auth; field order is the wire order.
type webhookRequest struct {
	APIKey  string            `json:"api_key"`
	Method  string            `json:"method"`
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"`
}

// askWebhook answers a remembered refusal for the credential without a call; otherwise it calls
// the webhook within the concurrency bound and remembers a 401 (per credential) or a 403 (per
// credential, method and path). Successes are never remembered.
func (a *Authenticator) askWebhook(ctx context.Context, r *http.Request, key string, digest negKey, method string) (*Caller, error) {
	if a.refused.get(digest) == http.StatusUnauthorized {
		return nil, errInvalid()
	}
	fk := forbiddenKey(digest, method, r.URL.Path)
	if a.refused.get(fk) == http.StatusForbidden {
		return nil, errForbidden()
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	select {
	case a.calls <- struct{}{}:
		defer func() { <-a.calls }()
	case <-ctx.Done():
		a.busy(ctx)
		return nil, errUnavailable()
	}
	start := time.Now()
	c, err := a.callWebhook(ctx, r, key, method)
	var e *Error
	if a.onWebhook != nil {
		outcome := "ok"
		if err != nil {
			outcome = "error"
			if errors.As(err, &e) && (e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden) {
				outcome = "refused"
			}
		}
		a.onWebhook(time.Since(start), outcome)
	}
	if errors.As(err, &e) {
		switch e.Status {
		case http.StatusUnauthorized:
			a.refused.put(digest, e.Status)
		case http.StatusForbidden:
			a.refused.put(fk, e.Status)
		}
	}
	return c, err
}

// callWebhook asks custom_auth who holds key. 200 yields the identity; 401/403 are passed
// through; anything else is 503.
func (a *Authenticator) callWebhook(ctx context.Context, r *http.Request, key, method string) (*Caller, error) {
	headers, ok := webhookHeaders(r.Header)
	if !ok {
		return nil, errHeadersTooLarge()
	}
	body, err := json.Marshal(webhookRequest{
		APIKey: key, Method: method, Path: r.URL.Path, Headers: headers,
	})
	if err != nil {
		return nil, a.unavailable(ctx, "encode request")
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.webhook, bytes.NewReader(body))
	if err != nil {
		return nil, a.unavailable(ctx, "build request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, a.unavailable(ctx, transportReason(err))
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		drain(resp.Body)
		a.log.Debug("custom_auth refused the caller", "status", resp.StatusCode, "method", method)
		return nil, errInvalid()
	case http.StatusForbidden:
		drain(resp.Body)
		a.log.Debug("custom_auth refused the caller", "status", resp.StatusCode, "method", method)
		return nil, errForbidden()
	default:
		drain(resp.Body)
		return nil, a.unavailable(ctx, "unexpected status "+strconv.Itoa(resp.StatusCode))
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxWebhookBody+1))
	if err != nil {
		return nil, a.unavailable(ctx, transportReason(err))
	}
	if len(raw) > maxWebhookBody {
		return nil, a.unavailable(ctx, "identity document larger than 1 MiB")
	}
	c, err := decodeIdentity(raw)
	if err != nil {
		return nil, a.unavailable(ctx, "invalid identity document: "+err.Error())
	}
	return c, nil
}

// busy logs that a caller found every webhook slot taken: at WARN at most once a second (a
// flood must not flood the log too), else at DEBUG.
func (a *Authenticator) busy(ctx context.Context) {
	now := time.Now().UnixNano()
	last := a.busyLogged.Load()
	level := slog.LevelDebug
	if now-last >= int64(time.Second) && a.busyLogged.CompareAndSwap(last, now) {
		level = slog.LevelWarn
	}
	a.log.Log(context.WithoutCancel(ctx), level, "custom_auth webhook busy: every call slot taken; refusing with 503")
}

// unavailable logs a webhook failure and returns the 503 error. reason is always the package's
// own text: never the key, the URL or anything the webhook sent.
func (a *Authenticator) unavailable(ctx context.Context, reason string) *Error {
	level := slog.LevelWarn
	if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		level = slog.LevelDebug // the caller went away; nothing is wrong with the webhook
	}
	a.log.Log(context.WithoutCancel(ctx), level, "custom_auth webhook failed; refusing with 503", "reason", reason)
	return errUnavailable()
}

// transportReason classifies a client error without its text: *url.Error carries the URL (which
// may hold a secret in its query) and transport errors may quote bytes the webhook sent.
func transportReason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	}
	var op *net.OpError
	if errors.As(err, &op) {
		return "network error (" + op.Op + ")"
	}
	return "transport error"
}

func drain(r io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(r, 64<<10)) }
