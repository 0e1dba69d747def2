package faults

import (
	"fmt"
	"os"
)

// runHelper runs the test binary as a helper process of a case (mode is
// $FLOWER_FAULTS_HELPER) and returns its exit code.
func runHelper(mode string) int {
	switch mode {
	default:
		fmt.Fprintf(os.Stderr, "faults: unknown helper mode %q\n", mode)
		return 2
	}
}
