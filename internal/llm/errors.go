package llm

import "errors"

// ErrInvalidRequest marks a malformed sampling/createMessage request; no provider call was made.
var ErrInvalidRequest = errors.New("invalid sampling request")

// ErrUnsupported marks a well-formed request the bridge cannot fulfil (audio, tools); no provider call was made.
var ErrUnsupported = errors.New("unsupported sampling request")

// ErrNoModel is returned when no model is configured at all; its text is LiteLLM's verbatim (hence the capital and period).
var ErrNoModel = errors.New("No model could be resolved for MCP sampling. Please configure 'default_mcp_sampling_model' in your LiteLLM configuration.")

// ErrProvider marks a failed provider call: transport error, timeout, non-2xx status or unusable answer.
var ErrProvider = errors.New("sampling provider failed")

// sampleError carries a message of its own while matching a kind (and an optional cause) with errors.Is.
type sampleError struct {
	kind  error
	cause error
	msg   string
}

// Error returns the message alone, without the kind's text.
func (e *sampleError) Error() string { return e.msg }

// Unwrap exposes the kind and the cause to errors.Is.
func (e *sampleError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func invalid(msg string) error {
	return &sampleError{kind: ErrInvalidRequest, msg: "invalid sampling request: " + msg}
}

func unsupported(msg string) error { return &sampleError{kind: ErrUnsupported, msg: msg} }

func providerErr(msg string, cause error) error {
	return &sampleError{kind: ErrProvider, cause: cause, msg: msg}
}
