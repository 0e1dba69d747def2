package sqlite

import (
	"fmt"
	"os"
	"testing"
)

// TestMain doubles as the helper process of the two-process tests: with
// helperDBEnv set, the binary appends as one of them instead of testing.
func TestMain(m *testing.M) {
	if path := os.Getenv(helperDBEnv); path != "" {
		if err := runHelper(path); err != nil {
			fmt.Fprintln(os.Stderr, "store helper:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
