//go:build !unix

package bench

import "time"

// processCPU cannot be read here: -1.
func processCPU() time.Duration { return -1 }
