//go:build !race

package shallow

const raceEnabled = false
