package upstream

import (
	"context"
	"errors"
	"net/http"
)

// Fault is one of the closed set of upstream failure classes. Every error an
// operation returns maps to exactly one.
type Fault string

// The fault classes.
const (
	FaultAuthRequired  Fault = "auth_required"
	FaultForbidden     Fault = "forbidden"
	FaultTimeout       Fault = "timeout"
	FaultUnreachable   Fault = "unreachable"
	FaultUpstreamError Fault = "upstream_error"
	FaultInternal      Fault = "internal"
)

// Classified is an error's fault class with what a caller may be shown.
type Classified struct {
	Fault      Fault
	HTTPStatus int    // the status to answer the caller with
	Challenge  string // WWW-Authenticate to pass on (auth faults only)
	Message    string // safe for callers: no upstream body, no secret
}

// Classify maps any error to its fault class. Classification is total: an
// error it does not recognise is internal. A 401 or 403 anywhere in the
// error tree wins, the first in cause order, with its own challenge.
func Classify(err error) Classified {
	if err == nil {
		return Classified{Fault: FaultInternal, HTTPStatus: http.StatusInternalServerError, Message: "no error"}
	}
	if se := firstAuthStatus(err); se != nil {
		if se.Status == http.StatusForbidden {
			return Classified{Fault: FaultForbidden, HTTPStatus: http.StatusForbidden, Challenge: se.Challenge, Message: "upstream refused access (HTTP 403)"}
		}
		return Classified{Fault: FaultAuthRequired, HTTPStatus: http.StatusUnauthorized, Challenge: se.Challenge, Message: "upstream requires authentication (HTTP 401)"}
	}
	if errors.As(err, new(*BudgetError)) {
		return Classified{Fault: FaultUpstreamError, HTTPStatus: http.StatusServiceUnavailable, Message: (&BudgetError{}).Error()}
	}
	if errors.As(err, new(*PoolFullError)) {
		return Classified{Fault: FaultUpstreamError, HTTPStatus: http.StatusServiceUnavailable, Message: (&PoolFullError{}).Error()}
	}
	var (
		te *TimeoutError
		se *StatusError
		ce *ConnectionError
		pe *ProtocolError
		re *RPCError
	)
	switch {
	case errors.As(err, &te):
		return Classified{Fault: FaultTimeout, HTTPStatus: http.StatusGatewayTimeout, Message: te.Error()}
	case errors.As(err, &se):
		status := http.StatusBadGateway
		if se.Status == http.StatusTooManyRequests || se.Status == http.StatusServiceUnavailable {
			status = se.Status
		}
		return Classified{Fault: FaultUpstreamError, HTTPStatus: status, Message: se.Error()}
	case errors.As(err, &ce):
		return Classified{Fault: FaultUnreachable, HTTPStatus: http.StatusBadGateway, Message: ce.Msg}
	case errors.As(err, &pe):
		return Classified{Fault: FaultUpstreamError, HTTPStatus: http.StatusBadGateway, Message: pe.Msg}
	case errors.As(err, &re):
		return Classified{Fault: FaultUpstreamError, HTTPStatus: http.StatusBadGateway, Message: "upstream answered with a JSON-RPC error"}
	case errors.Is(err, context.DeadlineExceeded):
		return Classified{Fault: FaultTimeout, HTTPStatus: http.StatusGatewayTimeout, Message: "deadline exceeded before the upstream answered"}
	case errors.Is(err, context.Canceled):
		return Classified{Fault: FaultInternal, HTTPStatus: http.StatusInternalServerError, Message: "request cancelled"}
	}
	return Classified{Fault: FaultInternal, HTTPStatus: http.StatusInternalServerError, Message: "internal error"}
}

// firstAuthStatus walks the error tree depth first, in cause order, for a
// 401 or 403 answer.
func firstAuthStatus(err error) *StatusError {
	if se, ok := err.(*StatusError); ok && (se.Status == http.StatusUnauthorized || se.Status == http.StatusForbidden) {
		return se
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if se := firstAuthStatus(e); se != nil {
				return se
			}
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return firstAuthStatus(e)
		}
	}
	return nil
}
