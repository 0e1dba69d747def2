// Package lang holds the one rule that tells which language a tag asks
// for. flower speaks Chinese (the original's language, the default) and
// English; every package that renders text decides through IsEnglish, and
// the public entry points refuse any other tag through Check.
package lang

import (
	"fmt"
	"strings"
)

// IsEnglish reports whether tag asks for English: "en" and its regional
// forms ("en-US", "en_GB"), in any case. Anything else renders as Chinese;
// Check keeps other tags from getting this far.
func IsEnglish(tag string) bool { return is(tag, "en") }

// IsChinese reports whether tag asks for Chinese: "" (the default), "zh"
// and its regional forms ("zh-CN", "zh_TW"), in any case.
func IsChinese(tag string) bool { return tag == "" || is(tag, "zh") }

func is(tag, base string) bool {
	l := strings.ToLower(tag)
	return l == base || strings.HasPrefix(l, base+"-") || strings.HasPrefix(l, base+"_")
}

// Check accepts the tags flower speaks: "" and "zh…" (Chinese), "en…"
// (English). Any other tag is an error that lists both, rather than a run
// that silently speaks Chinese.
func Check(tag string) error {
	if IsEnglish(tag) || IsChinese(tag) {
		return nil
	}
	return fmt.Errorf("language %q is not supported: use \"en\" (English) or \"zh\" (Chinese, the default)", tag)
}
