package sse

// Retry returns the most recent valid "retry:" value in milliseconds and whether one has been seen.
func (r *Reader) Retry() (ms int, ok bool) { return r.reconn, r.hasRetry }

// Comments returns the number of comment lines (starting with ':') skipped so far.
func (r *Reader) Comments() int64 { return r.comments }

// Buffered reports the capacity of the encoding buffer w holds between writes.
func (w *Writer) Buffered() int { return cap(w.buf) }
