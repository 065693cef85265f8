//go:build unix && !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package kernel

// waitExitNoReap cannot see an exit without reaping here; group signals
// then stop once Wait has reaped the leader.
func waitExitNoReap(int) bool { return false }
