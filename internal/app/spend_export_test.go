package app

import "github.com/mcpgw/mcpgw/internal/spend"

// SpendStats is what the spend writer has done so far (zero without a store).
func (a *App) SpendStats() spend.Stats {
	if a.spend == nil {
		return spend.Stats{}
	}
	return a.spend.w.Stats()
}
