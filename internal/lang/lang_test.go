package lang

import (
	"strings"
	"testing"
)

func TestZeroLangIsEnglish(t *testing.T) {
	var zero Lang
	if !zero.IsEnglish() || zero.IsChinese() || zero.Canonical() != English || zero.Pick("中", "en") != "en" {
		t.Errorf("the zero Lang must render English")
	}
}

func TestLangTags(t *testing.T) {
	for tag, chinese := range map[Lang]bool{
		"en": false, "EN": false, "en-US": false, "en_GB": false, "": false,
		"zh": true, "ZH": true, "zh-CN": true, "zh_TW": true,
	} {
		if got := tag.IsChinese(); got != chinese {
			t.Errorf("Lang(%q).IsChinese() = %v, want %v", tag, got, chinese)
		}
		if got := tag.IsEnglish(); got == chinese {
			t.Errorf("Lang(%q).IsEnglish() = %v, want %v", tag, got, !chinese)
		}
	}
}

func TestCheckAcceptsEnglishAndChineseOnly(t *testing.T) {
	for tag, ok := range map[Lang]bool{
		"": true, "en": true, "en-US": true, "EN_gb": true, "zh": true, "zh-CN": true, "ZH_tw": true,
		"ko": false, "english": false, "fr": false, "e": false, "zhx": false, "-": false,
	} {
		err := Check(tag)
		if (err == nil) != ok {
			t.Errorf("Check(%q) = %v, want ok=%v", tag, err, ok)
		}
		if err != nil && (!strings.Contains(err.Error(), `"en"`) || !strings.Contains(err.Error(), `"zh"`)) {
			t.Errorf("Check(%q) = %q: the error must list both languages", tag, err)
		}
	}
}

func TestFromLocaleFollowsLCAllThenLCMessagesThenLang(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want Lang
	}{
		{map[string]string{}, English},
		{map[string]string{"LANG": "zh_CN.UTF-8"}, Chinese},
		{map[string]string{"LANG": "en_US.UTF-8"}, English},
		{map[string]string{"LANG": "zh_CN.UTF-8", "LC_MESSAGES": "en_US.UTF-8"}, English},
		{map[string]string{"LANG": "en_US.UTF-8", "LC_MESSAGES": "zh_TW.UTF-8"}, Chinese},
		{map[string]string{"LC_ALL": "zh_CN", "LC_MESSAGES": "en_US", "LANG": "en_US"}, Chinese},
		{map[string]string{"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}, English},
		{map[string]string{"LANG": "\x1b[2J¿garbage?"}, English},
		{map[string]string{"LANG": "ZH_hk"}, Chinese},
	} {
		if got := FromLocale(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("FromLocale(%v) = %q, want %q", c.env, got, c.want)
		}
	}
}
