package app

import (
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/store/postgres"
)

// dbFlags are the team commands' ways to the database: --db names it
// without a password (every user of the machine reads a process's
// arguments with ps), --db-file reads the whole URL from a file only its
// owner can read; else $FLOWER_DATABASE_URL. A URL without a password
// gets it from PostgreSQL's own password file (~/.pgpass or $PGPASSFILE)
// or $PGPASSWORD, as pgx reads them.
type dbFlags struct {
	url, file string
}

func (d *dbFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&d.url, "db", "", "")
	fs.StringVar(&d.file, "db-file", "", "")
}

// teamRun reports whether reply or report, given pos, serve a run of the
// team instead of the run here: --db or --db-file was given, or
// $FLOWER_DATABASE_URL is set and the first argument names a team's run
// (r12) that is no file or folder here.
func (m *Command) teamRun(fs *flag.FlagSet, pos []string) bool {
	if isSet(fs, "db") || isSet(fs, "db-file") {
		return true
	}
	if strings.TrimSpace(m.getenv(flower.DatabaseEnv)) == "" || len(pos) == 0 || !runName.MatchString(pos[0]) {
		return false
	}
	_, err := os.Lstat(pos[0])
	return errors.Is(err, os.ErrNotExist)
}

// runName is how a team's run is named on a command line.
var runName = regexp.MustCompile(`^r[1-9][0-9]*$`)

// teamDB is the database URL cmd connects to. A password inside --db, a
// --db-file others may read or that is not the user's: a usage error with
// the fix, the password never shown.
func (m *Command) teamDB(d dbFlags, cmd string, lang flower.Lang) (string, error) {
	url, file := strings.TrimSpace(d.url), strings.TrimSpace(d.file)
	switch {
	case url != "" && file != "":
		return "", usageErrorf(text(lang, "teamDBBoth"), m.name(), cmd)
	case url != "":
		if postgres.PasswordOf(url) != "" {
			return "", usageErrorf(text(lang, "teamDBPassword"), postgres.Redact(url), flower.DatabaseEnv)
		}
		return url, nil
	case file != "":
		return readDBFile(file, lang)
	}
	if url = strings.TrimSpace(m.getenv(flower.DatabaseEnv)); url != "" {
		return url, nil
	}
	return "", usageErrorf(text(lang, "teamDBNeeded"), m.name(), cmd, flower.DatabaseEnv)
}

// readDBFile reads the database URL from path, which must be a regular
// file of this user's that neither group nor others may read or write
// (as ssh and libpq ask of theirs): a password others can read is no
// secret. The checks are made on the file opened, not on its name.
func readDBFile(path string, lang flower.Lang) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", usageErrorf(text(lang, "teamDBFileOpen"), path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", usageErrorf(text(lang, "teamDBFileOpen"), path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", usageErrorf(text(lang, "teamDBFileOpen"), path, errors.New("not a regular file"))
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return "", usageErrorf(text(lang, "teamDBFileOwner"), path, st.Uid, os.Geteuid(), path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", usageErrorf(text(lang, "teamDBFileMode"), path, uint32(perm), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<10))
	if err != nil {
		return "", usageErrorf(text(lang, "teamDBFileOpen"), path, err)
	}
	url := strings.TrimSpace(string(data))
	if url == "" || strings.ContainsAny(url, "\n\r") {
		return "", usageErrorf(text(lang, "teamDBFileEmpty"), path)
	}
	return url, nil
}
