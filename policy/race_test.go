//go:build race

package policy

// raceEnabled: the test binary runs with the race detector.
const raceEnabled = true
