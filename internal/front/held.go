package front

import "time"

// keepaliveInterval is how often an idle held stream carries a comment.
const keepaliveInterval = 15 * time.Second

// duties are a held stream's periodic work on one timer: re-checking its
// caller every recheck interval from the start and, once the stream is
// open (open), a keepalive every keepaliveInterval. One timer instead of a
// ticker per duty: a held stream pays for one. Only the stream's own
// goroutine uses it.
type duties struct {
	timer     *time.Timer
	every     time.Duration // between two re-checks
	recheckAt time.Time
	keepAt    time.Time // zero until open
}

// newWakingDuties are duties whose timer, instead of a channel of its
// own, wakes the stream on wake (a send that never blocks): the channel
// its listen waits on for everything (gateway.Listener.Wake), so a held
// stream waits on one channel fewer and holds no timer channel.
func newWakingDuties(recheckEvery time.Duration, wake chan struct{}) *duties {
	t := time.AfterFunc(recheckEvery, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	return &duties{timer: t, every: recheckEvery, recheckAt: time.Now().Add(recheckEvery)}
}

// open starts the keepalives.
func (d *duties) open() {
	d.keepAt = time.Now().Add(keepaliveInterval)
	d.arm()
}

// due reports which duties are due now (the stream does them), moves their
// deadlines on and, when one was due, sets the timer for the next one (a
// wake for a queued message, with nothing due, leaves the timer as it is:
// it is set for the same deadline already).
func (d *duties) due() (recheck, keepalive bool) {
	now := time.Now()
	if !now.Before(d.recheckAt) {
		recheck, d.recheckAt = true, now.Add(d.every)
	}
	if !d.keepAt.IsZero() && !now.Before(d.keepAt) {
		keepalive, d.keepAt = true, now.Add(keepaliveInterval)
	}
	if recheck || keepalive {
		d.arm()
	}
	return recheck, keepalive
}

// arm sets the timer for the next duty.
func (d *duties) arm() {
	next := d.recheckAt
	if !d.keepAt.IsZero() && d.keepAt.Before(next) {
		next = d.keepAt
	}
	d.timer.Reset(time.Until(next))
}

// stop stops the timer.
func (d *duties) stop() { d.timer.Stop() }
