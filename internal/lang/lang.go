// Package lang holds the one rule that tells which language a tag asks
// for. flower speaks Chinese (the original's language, the default) and
// English; every package that renders text decides through IsEnglish.
package lang

import "strings"

// IsEnglish reports whether tag asks for English: "en" and its regional
// forms ("en-US", "en_GB"), in any case. Anything else is Chinese.
func IsEnglish(tag string) bool {
	l := strings.ToLower(tag)
	return l == "en" || strings.HasPrefix(l, "en-") || strings.HasPrefix(l, "en_")
}
