// Package lang holds flower's one language type and the one rule that
// tells which language a tag or a locale asks for. flower speaks English
// (the zero value) and Chinese (the original's literals); every package
// that renders text decides through Lang's methods, and the public entry
// points refuse any other tag through Check. The public names of the type
// are doc.Lang and flower.Lang.
package lang

import (
	"fmt"
	"strings"
)

// Lang is a language tag: English for "" (the zero value), "en" and its
// regional forms; Chinese for "zh" and its regional forms ("zh-CN",
// "zh_TW"), in any case. Check refuses every other tag.
type Lang string

const (
	// English renders every text in English. It is the zero value's
	// language too.
	English Lang = "en"
	// Chinese reproduces the original flower's literals exactly.
	Chinese Lang = "zh"
)

// IsChinese reports whether l asks for Chinese: "zh" and its regional forms.
func (l Lang) IsChinese() bool { return is(string(l), "zh") }

// IsEnglish reports whether l renders in English: everything that is not
// Chinese, the zero value included (Check keeps other tags out).
func (l Lang) IsEnglish() bool { return !l.IsChinese() }

// Canonical is English or Chinese.
func (l Lang) Canonical() Lang {
	if l.IsChinese() {
		return Chinese
	}
	return English
}

// Pick returns zh for Chinese and en for everything else.
func (l Lang) Pick(zh, en string) string {
	if l.IsChinese() {
		return zh
	}
	return en
}

func is(tag, base string) bool {
	l := strings.ToLower(tag)
	return l == base || strings.HasPrefix(l, base+"-") || strings.HasPrefix(l, base+"_")
}

// Check accepts the tags flower speaks: "" and "en…" (English), "zh…"
// (Chinese). Any other tag is an error that lists both, rather than a run
// that silently speaks a language nobody asked for.
func Check(l Lang) error {
	if l == "" || is(string(l), "en") || l.IsChinese() {
		return nil
	}
	return fmt.Errorf("language %q is not supported: use \"en\" (English, the default) or \"zh\" (Chinese)", string(l))
}

// FromLocale is the language of the locale: the first set of LC_ALL,
// LC_MESSAGES and LANG (POSIX's order), Chinese when it begins with "zh",
// English for anything else, garbage and "C" included.
func FromLocale(getenv func(string) string) Lang {
	for _, k := range []string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		if v := getenv(k); v != "" {
			if strings.HasPrefix(strings.ToLower(v), "zh") {
				return Chinese
			}
			return English
		}
	}
	return English
}
