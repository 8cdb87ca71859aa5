//go:build !linux

package ledger

import "time"

func minorFaults() int64                          { return -1 }
func firstTouch(path string, n int) time.Duration { return 0 }
