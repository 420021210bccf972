//go:build !race

package stdlib

const RaceEnabled = false
