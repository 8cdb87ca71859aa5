//go:build !linux

package redistest

import "os/exec"

// setParentDeathSignal does nothing where the kernel has no parent-death signal.
func setParentDeathSignal(*exec.Cmd) {}
