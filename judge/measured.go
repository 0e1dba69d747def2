package judge

import (
	"fmt"

	"github.com/flowerrun/flower/doc"
)

// Outcome is the measurement's result in a few words, in lang.
func (m Measurement) Outcome(lang doc.Lang) string {
	switch {
	case m.Err != "":
		return lang.Pick("没有运行:", "not run: ") + m.Err
	case m.TimedOut:
		return fmt.Sprintf(lang.Pick("%v 内没有结束", "did not end within %v"), m.Duration.Round(1e9))
	case m.Environment != "":
		return fmt.Sprintf(lang.Pick("退出码 %d,因为缺少%s(不是工作的问题,但也不算通过;要让 flower 的实测联网,用 --check-network)",
			"exit status %d, for want of the %s (not the work's failure, nor a pass; to let flower's runs use the network, give --check-network)"), m.Exit, m.Environment)
	default:
		return fmt.Sprintf(lang.Pick("退出码 %d", "exit status %d"), m.Exit)
	}
}
