package team

import (
	"testing"

	"github.com/flowerrun/flower/store/postgres"
)

func TestWithPasswordWritesThePasswordPgxFoundForTheRuns(t *testing.T) {
	for _, c := range []struct{ raw, password, want string }{
		{"postgres://flower@db:5432/team", "p@ss/w'rd", "postgres://flower:p%40ss%2Fw%27rd@db:5432/team"},
		{"postgres://flower:given@db/team", "other", "postgres://flower:given@db/team"},
		{"postgres://flower@db/team", "", "postgres://flower@db/team"},
		{"host=db user=flower dbname=team", `it's\x`, `host=db user=flower dbname=team password='it\'s\\x'`},
	} {
		got := withPassword(c.raw, c.password)
		if got != c.want {
			t.Errorf("withPassword(%q, %q) = %q, want %q", c.raw, c.password, got, c.want)
		}
		if c.password != "" && postgres.PasswordOf(got) == "" {
			t.Errorf("withPassword(%q): no password in %q", c.raw, got)
		}
	}
}
