//go:build !race

package console

// raceDetector: the tests run with -race.
const raceDetector = false
