package front

import "time"

// Server health statuses, as LiteLLM's LiteLLM_MCPServerTable.status names them.
const (
	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
	HealthUnknown   = "unknown"
)

// ServerHealth is what the health prober last learned about one server.
type ServerHealth struct {
	// Status is HealthHealthy, HealthUnhealthy or HealthUnknown (never checked).
	Status string
	// LastCheck is when the last check ended; zero when never checked.
	LastCheck time.Time
	// Error is the last failed check's error, free of secrets and upstream
	// bodies; empty when healthy.
	Error string
}
