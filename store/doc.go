// Package store keeps Claude Code transcripts for flower: SQLite, a
// claude.SessionStore in one database file that several flower processes can
// share, and the layers that decorate any SessionStore on Load (Trimming,
// Pruning) so a resumed session gets a lighter history while the stored
// rows never change.
//
// Open the database once per run directory and hand it to the driver:
//
//	db, err := store.Open(filepath.Join(runDir, "sessions.db"))
//	if err != nil {
//		return err // says what to do, e.g. move a corrupt file aside
//	}
//	defer db.Close()
//
// Errors wrap ErrInvalidKey, ErrInvalidEntry, ErrCorrupt, ErrLocked and
// ErrNewerSchema for errors.Is.
package store
