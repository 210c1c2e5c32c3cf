package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxAnswer bounds one management answer read by the key commands (a /key/list page of 100
// full key objects is well under it).
const maxAnswer = 16 << 20

// apiClient calls the gateway's management API with the master key.
type apiClient struct {
	base, key string
	http      *http.Client
}

func newAPIClient(base, key string) *apiClient {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	return &apiClient{base: base, key: key, http: &http.Client{Transport: tr, Timeout: keyRequestTimeout}}
}

// close ends the client's idle connections.
func (c *apiClient) close() { c.http.CloseIdleConnections() }

// keyAnswer is the part of a key object (LiteLLM's field names) the commands print.
type keyAnswer struct {
	Key      string     `json:"key"`
	Token    string     `json:"token"`
	KeyAlias *string    `json:"key_alias"`
	TeamID   *string    `json:"team_id"`
	UserID   *string    `json:"user_id"`
	Expires  *time.Time `json:"expires"`
	Blocked  bool       `json:"blocked"`
}

// apiError is an answer other than 200: the API's own message and the status.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return fmt.Sprintf("%s (HTTP %d)", e.msg, e.status) }

// do sends method path with body (JSON; nil for none) and decodes a 200 answer into out (when
// not nil); it returns the raw answer too. Any other status is an *apiError carrying the API's
// message ({"error": {"message"}} or {"detail": ...}).
func (c *apiClient) do(ctx context.Context, method, path string, body, out any) (json.RawMessage, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding the request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the gateway at %s: %w", c.base, unwrapURLError(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return nil, fmt.Errorf("reading the gateway's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &apiError{status: resp.StatusCode, msg: errorMessage(raw, resp.Status)}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return nil, fmt.Errorf("the gateway's answer to %s %s is not what the key API answers: %w", method, path, err)
		}
	}
	return raw, nil
}

// unwrapURLError drops *url.Error's "Post \"URL\":" prefix; the caller names the gateway itself.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// errorMessage reads the API's error message from raw: LiteLLM's {"error": {"message"}}, or
// {"detail": ...}; else the HTTP status text (an answer from something that is not the gateway
// is not echoed).
func errorMessage(raw []byte, status string) string {
	var m struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(raw, &m) == nil {
		if m.Error.Message != "" {
			return m.Error.Message
		}
		var s string
		if json.Unmarshal(m.Detail, &s) == nil && s != "" {
			return s
		}
		if len(m.Detail) > 0 && len(m.Detail) <= 512 {
			return string(m.Detail)
		}
	}
	return "the gateway answered " + status
}
