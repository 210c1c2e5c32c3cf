package app

// Generations is the number of configs applied so far (1 at New).
func (a *App) Generations() int64 { return a.generation.Load() }
