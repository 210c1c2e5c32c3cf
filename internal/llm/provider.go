package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// errCallTimeout is the cause attached to the per-call deadline, to tell it from the caller's.
var errCallTimeout = errors.New("sampling provider call timed out")

// drainLimit bounds how much of an error response is read so the connection can be reused.
const drainLimit = 64 << 10

// call makes the single provider POST for m and decodes the answer.
func (s *Sampler) call(ctx context.Context, m *model, body []byte) (*chatResponse, error) {
	start := time.Now()
	resp, status, err := s.post(ctx, m, body)
	attrs := []slog.Attr{
		slog.String("model", m.Name),
		slog.String("provider_model", m.ProviderModel()),
		slog.Duration("duration", time.Since(start)),
	}
	if status != 0 {
		attrs = append(attrs, slog.Int("status", status))
	}
	if err != nil {
		s.log.LogAttrs(ctx, slog.LevelWarn, "sampling provider call failed", append(attrs, slog.String("error", err.Error()))...)
		return nil, err
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "sampling provider call", attrs...)
	return resp, nil
}

// post sends body and returns the decoded answer and the HTTP status (0 when none arrived).
func (s *Sampler) post(ctx context.Context, m *model, body []byte) (*chatResponse, int, error) {
	cctx, cancel := context.WithTimeoutCause(ctx, s.timeout, errCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, 0, providerErr("sampling provider request could not be built", nil) // endpoint was validated in New
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if m.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.APIKey)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, 0, s.transportErr(ctx, cctx, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, drainLimit))
		return nil, resp.StatusCode, providerErr("sampling provider answered HTTP "+strconv.Itoa(resp.StatusCode), nil)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return nil, resp.StatusCode, s.transportErr(ctx, cctx, err)
	}
	if len(data) > MaxResponseBytes {
		return nil, resp.StatusCode, providerErr(fmt.Sprintf("sampling provider response exceeds %d MiB", MaxResponseBytes>>20), nil)
	}
	var out chatResponse
	if err := json.Unmarshal(data, &out); err != nil {
		// The decoder's message can quote the body; it is deliberately dropped.
		return nil, resp.StatusCode, providerErr("sampling provider returned an invalid response", nil)
	}
	return &out, resp.StatusCode, nil
}

// transportErr classifies a failure to send or read: caller cancellation, our timeout, or a network error.
func (s *Sampler) transportErr(parent, cctx context.Context, err error) error {
	if perr := parent.Err(); perr != nil {
		return &sampleError{kind: perr, msg: "sampling canceled: " + perr.Error()}
	}
	if errors.Is(context.Cause(cctx), errCallTimeout) {
		return providerErr("sampling provider timed out after "+formatDuration(s.timeout), context.DeadlineExceeded)
	}
	var te interface{ Timeout() bool }
	if errors.As(err, &te) && te.Timeout() { // e.g. http.Client.Timeout, while waiting or reading
		return providerErr("sampling provider timed out", context.DeadlineExceeded)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // url.Error's text repeats the URL; the cause alone is enough
	}
	return providerErr("sampling provider request failed: "+err.Error(), nil)
}

// formatDuration prints whole seconds as "60s" and anything else in Go's notation.
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}
