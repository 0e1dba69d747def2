// Package store keeps Claude Code transcripts for flower: the layers that
// decorate any claude.SessionStore on Load (Trimming, Pruning) so a resumed
// session gets a lighter history while the stored rows never change, the
// interfaces the layers forward (ProjectLister, SessionChecker,
// LastContextReader), and the errors every backend wraps. The backends live
// in packages of their own, one per database: store/sqlite (the default, one
// file per run directory) and store/postgres (a database a team shares).
//
// Open a backend once per run and hand it, wrapped in a layer, to the driver:
//
//	db, err := sqlite.Open(filepath.Join(runDir, "sessions.db"))
//	if err != nil {
//		return err // says what to do, e.g. move a corrupt file aside
//	}
//	defer db.Close()
//	st, err := store.NewPruning(db, workspace, store.TrimPolicy{}, store.PrunePolicy{}, store.EphemeralPolicy{})
//
// Errors wrap ErrInvalidKey, ErrInvalidEntry, ErrCorrupt, ErrLocked and
// ErrNewerSchema for errors.Is, whichever backend returned them.
package store
