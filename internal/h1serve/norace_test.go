//go:build !race

package h1serve

const raceEnabled = false
