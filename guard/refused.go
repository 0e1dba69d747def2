package guard

import (
	"regexp"
	"strings"
	"sync"
)

// refusalParts are the long literal parts of the walls' refusals, in
// every language: what a tool result's text holds when a wall refused the
// call (a result is often cut, so its first part may be all there is).
var refusalParts = sync.OnceValue(func() []string {
	verb := regexp.MustCompile(`%(\[\d+\])?[a-z]`)
	var out []string
	for _, t := range []Texts{ChineseTexts, EnglishTexts} {
		for _, s := range []string{t.DelegateDeny, t.WhitelistDeny, t.WorkerDeny, t.WorkerMissing, t.GlanceBackground} {
			for _, part := range verb.Split(s, -1) {
				if len([]rune(strings.TrimSpace(part))) >= 10 {
					out = append(out, part)
				}
			}
		}
	}
	return out
})

// Refused says whether a tool result's text is a wall's refusal of the
// call (a role's whitelist, the delegate rule, a glance the wall did not
// let through): what a worker's metrics count as refused calls.
func Refused(text string) bool {
	for _, p := range refusalParts() {
		if strings.Contains(text, p) {
			return true
		}
	}
	return false
}
