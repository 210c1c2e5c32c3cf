package observe

// ContextReader is implemented by a sink that reads the context a caller
// propagates with a request (a tracing sink reading W3C trace context from
// Request.Header and Request.Meta). The front extracts Request.Meta from the
// params only when such a sink listens, so other sinks cost no scan.
type ContextReader interface {
	ReadsPropagatedContext()
}

// ReadsMeta reports whether a sink reads Request.Meta.
func (o *Observer) ReadsMeta() bool { return o != nil && o.readsMeta }

// readsMeta reports whether one of sinks is a ContextReader.
func readsMeta(sinks []Sink) bool {
	for _, s := range sinks {
		if _, ok := s.(ContextReader); ok {
			return true
		}
	}
	return false
}
