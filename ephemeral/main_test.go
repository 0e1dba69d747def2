package ephemeral

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind (the bash
// cross-checks start processes under contexts).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
