package config

import "time"

// Health-check and preview defaults (HealthSettings).
const (
	// DefaultHealthCheckInterval is the default of mcp_health_check_interval.
	DefaultHealthCheckInterval = 60 * time.Second
	// DefaultHealthCheckTimeout is the default of mcp_health_check_timeout.
	DefaultHealthCheckTimeout = 10 * time.Second
)

// HealthSettings are the MCP server health prober's and the server previews'
// general_settings keys.
type HealthSettings struct {
	// Interval (mcp_health_check_interval, seconds) is the time between two
	// background checks of every server; 0 disables them.
	Interval time.Duration
	// Timeout (mcp_health_check_timeout, seconds) bounds one check; it must
	// be positive.
	Timeout time.Duration
	// PreviewAllowStdio (mcp_preview_allow_stdio) lets POST /mcp-rest/test/*
	// run a posted stdio command. Off by default: it is running any program
	// the caller names.
	PreviewAllowStdio bool
	// PreviewAllowPrivateNetworks (mcp_preview_allow_private_networks) lets
	// previews connect to loopback and private addresses. Off by default;
	// link-local addresses (cloud metadata) are refused either way.
	PreviewAllowPrivateNetworks bool
}

// DefaultHealthSettings returns the defaults of HealthSettings.
func DefaultHealthSettings() HealthSettings {
	return HealthSettings{Interval: DefaultHealthCheckInterval, Timeout: DefaultHealthCheckTimeout}
}

// healthKey reads one of the HealthSettings keys; false when e is not one.
func (l *loader) healthKey(e entry, field string, h *HealthSettings) bool {
	switch e.key {
	case "mcp_health_check_interval":
		if d, ok := l.seconds(e.v, field); ok {
			h.Interval = d
		}
	case "mcp_health_check_timeout":
		if d, ok := l.seconds(e.v, field); ok {
			if d <= 0 {
				l.errorf(e.v, "%s must be a positive number of seconds", field)
				return true
			}
			h.Timeout = d
		}
	case "mcp_preview_allow_stdio":
		h.PreviewAllowStdio, _ = l.boolean(e.v, field)
	case "mcp_preview_allow_private_networks":
		h.PreviewAllowPrivateNetworks, _ = l.boolean(e.v, field)
	default:
		return false
	}
	return true
}
