//go:build race

package shallow

// raceEnabled: the race detector doubles the stack guard, so a goroutine
// outgrows 2 KB at once and stack sizes are not what a normal build has.
const raceEnabled = true
