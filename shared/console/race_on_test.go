//go:build race

package console

// raceDetector: the tests run with -race (SQLite, translated C, is
// about five times slower under it).
const raceDetector = true
