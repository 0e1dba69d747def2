package flower

import (
	"github.com/flowerrun/flower/internal/lang"

	"github.com/flowerrun/flower/doc"
)

// Lang selects the language of the texts flower writes and feeds the model:
// rule texts, fixed prompts, guard refusals, document headings, step names.
// It is doc.Lang, so the whole project shares one language type. The zero
// value means Chinese.
type Lang = doc.Lang

const (
	// Chinese reproduces the original flower's literals exactly. Every Lang
	// other than English means Chinese.
	Chinese = doc.Chinese
	// English renders every text in English.
	English = doc.English
)

// isEnglish reports whether lang asks for English: "en" and its regional
// forms ("en-US", "en_GB"), in any case, as guard.TextsFor and
// workbench.TextsFor read it.
func isEnglish(l Lang) bool { return lang.IsEnglish(string(l)) }
