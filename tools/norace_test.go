//go:build !race

package tools

// raceEnabled: the test binary runs with the race detector.
const raceEnabled = false
