//go:build !race

package raceexit

// Var is empty: Main adds nothing to any environment without the race detector.
const Var = ""

// Main does nothing in a build without the race detector.
func Main() {}
