package upstream

import (
	"errors"
	"net/http"
	"sync"

	"github.com/mcpgw/mcpgw/internal/mcp"
)

// verdict is what an auto-mode probe found the upstream to speak.
type verdict uint8

const (
	verdictUnknown verdict = iota
	verdictModern
	verdictLegacy
	verdictSSE // legacy HTTP+SSE transport at the configured URL
)

// era is the protocol era a verdict means.
func (v verdict) era() mcp.Era {
	if v == verdictModern {
		return mcp.EraModern
	}
	return mcp.EraLegacy
}

// eraMismatch reports an answer that says the remembered era is wrong.
func eraMismatch(era mcp.Era, err error) bool {
	re := rpcErr(err)
	if re == nil {
		return false
	}
	if era == mcp.EraModern {
		return re.Code() == mcp.CodeUnsupportedProtocolVersion
	}
	return re.Code() == mcp.CodeUnsupportedProtocolVersion || re.Code() == mcp.CodeHeaderMismatch
}

// eraMemory is what a Client remembers of its upstream's era between
// sessions: the verdict of the last probe (auto mode) or the configured
// one.
type eraMemory struct {
	auto  bool // Config.ProtocolVersion is VersionAuto
	fixed bool // the transport decides the era (sse): never probed again

	mu sync.Mutex
	v  verdict
}

// newEraMemory returns the starting verdict for a configuration.
func newEraMemory(cfg *Config) *eraMemory {
	m := &eraMemory{auto: cfg.ProtocolVersion == VersionAuto, fixed: cfg.Transport == TransportSSE}
	switch {
	case m.fixed:
		m.v = verdictSSE
	case m.auto:
		m.v = verdictUnknown
	case mcp.IsModern(cfg.ProtocolVersion):
		m.v = verdictModern
	default:
		m.v = verdictLegacy
	}
	return m
}

func (m *eraMemory) get() verdict {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.v
}

func (m *eraMemory) set(v verdict) {
	m.mu.Lock()
	m.v = v
	m.mu.Unlock()
}

// forget makes the next session probe the upstream's era again.
func (m *eraMemory) forget() {
	if m.auto && !m.fixed {
		m.set(verdictUnknown)
	}
}

// sseFallbackSignal reports an initialize answer that, per the spec's
// compatibility rules, means "try the deprecated HTTP+SSE transport".
func sseFallbackSignal(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status == http.StatusBadRequest || se.Status == http.StatusNotFound || se.Status == http.StatusMethodNotAllowed
	}
	if re := rpcErr(err); re != nil {
		return re.HTTPStatus == http.StatusBadRequest || re.HTTPStatus == http.StatusNotFound || re.HTTPStatus == http.StatusMethodNotAllowed
	}
	return false
}
