package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

// mask replaces a password wherever the store prints a database URL.
const mask = "xxxxx"

var (
	// keywordPassword is a password given as a keyword/value pair, in a
	// connection string ("host=h password='p q'") or a URL's query
	// ("?password=p&...").
	keywordPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s&]*)`)
	// userinfoPassword is the password of a URL that does not parse:
	// everything between the user's ':' and the last '@' of the authority.
	userinfoPassword = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:/@?#]*:)[^/?#]*@`)
)

// Redact returns the database URL (or keyword/value connection string) raw
// with its password replaced by xxxxx, for messages and logs: wherever a
// password can be written (the URL's user info, a password= parameter or
// keyword), including in a URL that does not parse. Everything else is kept
// so the reader can tell which server and database were meant.
func Redact(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Opaque == "" {
		if u.User != nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), mask)
			}
		}
		if q := u.Query(); q.Has("password") {
			q.Set("password", mask)
			u.RawQuery = q.Encode()
		}
		return strings.Replace(u.String(), url.QueryEscape(mask), mask, 1)
	}
	s := userinfoPassword.ReplaceAllString(raw, "${1}"+mask+"@")
	return keywordPassword.ReplaceAllString(s, "${1}"+mask)
}

// PasswordOf returns the password written in raw, or "" when none is, by
// the same reading as Redact: the secret an error message must not show,
// and what a command refuses to take from its command line (every user
// of the machine reads a process's arguments).
func PasswordOf(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Opaque == "" {
		if u.User != nil {
			if p, has := u.User.Password(); has {
				return p
			}
		}
		return u.Query().Get("password")
	}
	if m := userinfoPassword.FindStringSubmatchIndex(raw); m != nil {
		return raw[m[3] : m[1]-1]
	}
	if m := keywordPassword.FindStringSubmatch(raw); m != nil {
		return strings.Trim(m[2], "'")
	}
	return ""
}

// scrubbed is an error whose message never shows secret, however the
// wrapped error (a driver's, say) spelled its connection string.
type scrubbed struct {
	err    error
	secret string
}

func (e *scrubbed) Error() string {
	if len(e.secret) < 3 { // too short to tell from ordinary words
		return e.err.Error()
	}
	return strings.ReplaceAll(e.err.Error(), e.secret, mask)
}

func (e *scrubbed) Unwrap() error { return e.err }

// scrub wraps err so its message never shows secret; nil stays nil.
func scrub(err error, secret string) error {
	if err == nil || secret == "" {
		return err
	}
	return &scrubbed{err: err, secret: secret}
}

// Scrub wraps err so its message never shows the password of the database
// URL raw, however the driver spelled it; errors.Is and errors.As still see
// the wrapped error. nil stays nil.
func Scrub(err error, raw string) error { return scrub(err, PasswordOf(raw)) }
