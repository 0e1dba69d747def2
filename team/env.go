package team

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/flowerrun/flower"
)

// A run's environment starts empty: the worker's own variables (its
// tokens, its agent sockets, the dashboard's token, whatever the host put
// there) reach a run only when they are on runEnvNames or the operator
// names them (--pass-env, WorkerOptions.PassEnv). What the worker sets
// for the run (its HOME, folders, CLI and the proxy's token) comes on top.

// runEnvNames are the variables every run gets from the worker: how to
// find programs, the person's language and time zone, the terminal's
// kind, and the CLI's switches that only turn its traffic off. None
// holds a credential.
var runEnvNames = []string{
	"PATH", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR",
	"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_TELEMETRY", "DISABLE_AUTOUPDATER",
	"DISABLE_ERROR_REPORTING", "DISABLE_BUG_COMMAND",
}

// runEnvPrefixes are the families of variables every run gets (the
// locale's categories).
var runEnvPrefixes = []string{"LC_"}

// envName is what --pass-env accepts: a variable's name as a shell
// writes it.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// CheckPassEnv refuses a name that is no variable's, or one a run must
// never get from the worker: the team's database and flower's own names
// for a run (those the worker sets itself).
func CheckPassEnv(name string) error {
	if !envName.MatchString(name) {
		return fmt.Errorf("team: %q is not a variable's name (letters, digits and _, not starting with a digit)", name)
	}
	if teamOnlyEnv(name) {
		return fmt.Errorf("team: %s is the worker's own (the database's address or a run's name in it); no run may have it", name)
	}
	return nil
}

// passed says the run gets the worker's variable k.
func passed(k string, pass []string) bool {
	if slices.Contains(runEnvNames, k) || slices.Contains(pass, k) {
		return true
	}
	for _, p := range runEnvPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// runEnv is a run's environment: the variables of base that are passed
// (runEnvNames, runEnvPrefixes, pass), then set. A passed value holding
// one of secrets (the database's password, the model's key the proxy
// stands for) is left out all the same.
func runEnv(base, pass []string, set map[string]string, secrets ...string) []string {
	out := make([]string, 0, len(set)+16)
	for _, kv := range base {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok || !passed(k, pass) || teamOnlyEnv(k) ||
			slices.ContainsFunc(secrets, func(s string) bool { return s != "" && strings.Contains(v, s) }) {
			continue
		}
		out = append(out, kv)
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	return out
}

// teamOnlyEnv says the variable k is the worker's, never a run's, even
// when an operator names it: the database's URL, how a run is named and
// leased in it, libpq's settings (PGPASSWORD, PGPASSFILE, PGSERVICE...)
// and the trace exporter's (a collector's token in its headers).
func teamOnlyEnv(k string) bool {
	switch k {
	case flower.DatabaseEnv, flower.RunNameEnv, flower.LeaseEnv, "DATABASE_URL", "FLOWER_ENV":
		return true
	}
	return strings.HasPrefix(k, "PG") || strings.HasPrefix(k, "OTEL_EXPORTER_OTLP_")
}

// publicEnvNames are variables of a worker's environment whose values
// are no secret though no run gets them: the push scan does not look for
// them (a script's "#!/bin/bash" is not the worker's SHELL leaking).
var publicEnvNames = []string{
	"HOME", "PWD", "OLDPWD", "SHELL", "USER", "LOGNAME", "HOSTNAME", "SHLVL", "_", "MAIL",
	"EDITOR", "VISUAL", "PAGER", "TMPDIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME",
	"XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS", "FLOWER_CLAUDE",
	"CI", "DEBIAN_FRONTEND", "INVOCATION_ID", "JOURNAL_STREAM", "MOTD_SHOWN",
}

// envSecretValues are the values of the worker's environment that no
// pushed commit may hold: every variable no run gets, but those whose
// value is no secret (publicEnvNames), names a file or folder of this
// machine (where, not what), is a number or a switch, or is too short
// to tell from ordinary text.
func envSecretValues(env, pass []string) []string {
	var out []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || passed(k, pass) || slices.Contains(publicEnvNames, k) || len(v) < 8 || ordinaryValue(v) {
			continue
		}
		out = append(out, v)
	}
	return out
}

// ordinaryValue is a value no one would keep secret: a number, a
// switch, an existing path or a list of them.
func ordinaryValue(v string) bool {
	if strings.Trim(v, "0123456789.") == "" {
		return true
	}
	switch strings.ToLower(v) {
	case "true", "false", "yes", "no", "on", "off":
		return true
	}
	for _, p := range strings.Split(v, ":") {
		if p == "" || !strings.HasPrefix(p, "/") {
			return false
		}
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	return true
}
