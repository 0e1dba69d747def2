package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/internal/pgtest"
	"github.com/flowerrun/flower/store"
	"github.com/flowerrun/flower/store/postgres"
	"github.com/flowerrun/flower/store/sqlite"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// holding returns a base for CheckLoadGolden over db: each case empties the
// golden key and appends its rows, as the mirror would, in batches of the
// mirror's size. A case whose rows no database holds as given (a row that
// is not a JSON object, refused; a uuid given twice, kept once) is
// skipped: what the layers do with such rows is the memory base's case.
// Any other difference is the backend's and fails the digests.
func holding(db claude.SessionStore) func(t testing.TB, rows []json.RawMessage) claude.SessionStore {
	return func(t testing.TB, rows []json.RawMessage) claude.SessionStore {
		t.Helper()
		ctx := context.Background()
		seen := map[string]bool{}
		for _, r := range rows {
			var id struct {
				UUID string `json:"uuid"`
			}
			if json.Unmarshal(r, &id) == nil && id.UUID != "" {
				if seen[id.UUID] {
					return nil
				}
				seen[id.UUID] = true
			}
		}
		if err := db.(claude.SessionDeleter).Delete(ctx, store.GoldenKey); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(rows); i += 500 {
			err := db.Append(ctx, store.GoldenKey, rows[i:min(i+500, len(rows))])
			if errors.Is(err, store.ErrInvalidEntry) {
				return nil
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		return db
	}
}

// checkGolden runs the golden cases over db and wants every case a
// database can hold compared: the two long generated sessions and most
// fixture sessions.
func checkGolden(t *testing.T, db claude.SessionStore) {
	compared, cases := store.CheckLoadGolden(t, holding(db))
	t.Logf("%d of %d golden cases compared; the others hold rows no database stores as given", compared, cases)
	if compared < cases/4 {
		t.Fatalf("only %d of %d golden cases compared", compared, cases)
	}
}

// TestLoadGoldenOnSQLite: the layers over the SQLite store give the golden
// output, byte for byte.
func TestLoadGoldenOnSQLite(t *testing.T) {
	db, err := sqlite.Open(filepath.Join(t.TempDir(), "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkGolden(t, db)
}

// TestLoadGoldenOnPostgres: the layers over the PostgreSQL store give the
// golden output, byte for byte.
func TestLoadGoldenOnPostgres(t *testing.T) {
	db, err := postgres.Open(t.Context(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	checkGolden(t, db)
}
