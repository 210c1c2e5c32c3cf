package app

import "context"

// Reload runs one forced reload now, as a signal's would after its debounce.
func (r *Reloader) Reload(ctx context.Context) (bool, error) { return r.reload(ctx, true) }
