package upstream

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
)

// maxCauses bounds the distinct failure causes one client remembers having
// warned about; beyond it, further causes are not warned about until the
// upstream answers again.
const maxCauses = 16

// causeLog warns operators once per distinct failure cause of one
// upstream, until the upstream answers again.
type causeLog struct {
	dirty atomic.Bool // some cause is remembered; read on every success

	mu   sync.Mutex
	seen map[string]struct{} // at most maxCauses
}

// first reports whether cause was not warned about since the last success,
// and remembers it.
func (l *causeLog) first(cause string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.seen[cause]; ok || len(l.seen) >= maxCauses {
		return false
	}
	if l.seen == nil {
		l.seen = make(map[string]struct{}, 4)
	}
	l.seen[cause] = struct{}{}
	l.dirty.Store(true)
	return true
}

// reset forgets every cause: the upstream answered.
func (l *causeLog) reset() {
	if !l.dirty.Load() {
		return
	}
	l.mu.Lock()
	clear(l.seen)
	l.dirty.Store(false)
	l.mu.Unlock()
}

// noteCause logs cause (failureCause), once per distinct cause until the upstream answers again
// and under the per-message rate limit, why an operation on the upstream
// failed. It is for operators: the cause never holds an upstream body, a
// credential or an argument, and callers are never shown it.
func (e *env) noteCause(cause string) {
	if cause == "" || !e.causes.first(cause) {
		return
	}
	e.msgWarn("upstream "+e.where+" failed: "+cause, "cause", cause)
}

// failureCause names why err happened, in words an operator can act on:
// the network, TLS, process or HTTP cause. It is "" for failures that are
// not the upstream's (cancellation, our own bounds) or that are already
// reported elsewhere (timeouts). The text is built from error types, never
// copied from an upstream answer.
func failureCause(err error) string {
	var (
		se  *StatusError
		re  *RPCError
		pe  *ProtocolError
		ce  *ConnectionError
		te  *TimeoutError
		be  *BudgetError
		pfe *PoolFullError
	)
	switch {
	case err == nil, errors.As(err, &te), errors.As(err, &be), errors.As(err, &pfe), errors.Is(err, ErrClosed):
		return ""
	case errors.As(err, &se):
		return fmt.Sprintf("HTTP %d %s", se.Status, http.StatusText(se.Status))
	case errors.As(err, &re):
		if re.HTTPStatus != 0 {
			return fmt.Sprintf("HTTP %d with JSON-RPC error %d", re.HTTPStatus, re.Code())
		}
		return "" // an answer, relayed to the caller as such
	case errors.As(err, &pe):
		return "protocol: " + pe.Msg
	case errors.As(err, &ce):
		if c := netFailure(ce.Err); c != "" {
			return c
		}
		return ce.Msg
	}
	return ""
}

// netFailure names a process, network or TLS cause in err's chain.
func netFailure(err error) string {
	if err == nil {
		return ""
	}
	var (
		dns   *net.DNSError
		ua    x509.UnknownAuthorityError
		he    x509.HostnameError
		ci    x509.CertificateInvalidError
		rh    tls.RecordHeaderError
		alert tls.AlertError
		cve   *tls.CertificateVerificationError
	)
	switch {
	case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
		return "command not found"
	case errors.Is(err, fs.ErrPermission):
		return "command not executable (permission denied)"
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "DNS lookup failed: no such host"
		}
		if dns.IsTimeout {
			return "DNS lookup failed: timeout"
		}
		return "DNS lookup failed"
	case errors.As(err, &ua):
		return "TLS: certificate signed by an unknown authority"
	case errors.As(err, &he):
		return "TLS: certificate not valid for the host"
	case errors.As(err, &ci):
		return "TLS: certificate invalid (expired, not yet valid or not allowed)"
	case errors.As(err, &cve):
		return "TLS: certificate verification failed"
	case errors.As(err, &rh):
		return "TLS: the server did not answer with TLS"
	case errors.As(err, &alert):
		return "TLS: handshake refused by the server"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the upstream"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "host or network unreachable"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the upstream"
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "connection timed out"
	}
	return ""
}
