package auth

import "time"

// Clock is the time source of ClientCredentials; tests inject a fake one.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// NewTimer returns a timer that fires once after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that a Clock hands out.
type Timer interface {
	// C returns the channel the timer fires on.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it was active.
	Stop() bool
}

// SystemClock is the real wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// NewTimer wraps time.NewTimer.
func (SystemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

// systemTimer adapts *time.Timer to Timer.
type systemTimer struct{ t *time.Timer }

// C returns the timer's channel.
func (s systemTimer) C() <-chan time.Time { return s.t.C }

// Stop stops the timer.
func (s systemTimer) Stop() bool { return s.t.Stop() }
