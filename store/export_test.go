package store

import (
	"encoding/json"
	"testing"

	"github.com/flowerrun/flower/claude"
)

// CheckLoadGolden runs TestLoadGolden's cases with base as the store under
// the layers and compares them with the same golden digests: the backends'
// tests (package store_test, free to import them) run it over SQLite and
// PostgreSQL. base returns a store holding rows, and only them, under the
// key the cases load, or nil when it cannot hold them as given. It returns
// how many cases were compared and how many there are.
func CheckLoadGolden(t *testing.T, base func(t testing.TB, rows []json.RawMessage) claude.SessionStore) (compared, cases int) {
	t.Helper()
	got := loadGoldenDigests(t, base)
	return checkLoadGolden(t, got), len(got)
}

// GoldenKey is the session key CheckLoadGolden's cases load.
var GoldenKey = fxKey
