package judge

import (
	"fmt"

	"github.com/flowerrun/flower/doc"
)

// WorkFailed reports whether the measurement shows the work failing: the
// command ran in the sandbox and exited non-zero or ran out of time, for a
// reason that is not the sandbox's (no network, no cache). A command that
// could not run at all says nothing about the work.
func (m Measurement) WorkFailed() bool {
	return m.Err == "" && m.Environment == "" && (m.TimedOut || m.Exit != 0)
}

// Outcome is the measurement's result in a few words, in lang.
func (m Measurement) Outcome(lang doc.Lang) string {
	switch {
	case m.Err != "":
		return lang.Pick("没有运行:", "not run: ") + m.Err
	case m.TimedOut:
		return fmt.Sprintf(lang.Pick("%v 内没有结束", "did not end within %v"), m.Duration.Round(1e9))
	case m.Environment != "":
		return fmt.Sprintf(lang.Pick("退出码 %d,因为缺少%s(不是工作的问题)", "exit status %d, for want of the %s (not the work's failure)"), m.Exit, m.Environment)
	default:
		return fmt.Sprintf(lang.Pick("退出码 %d", "exit status %d"), m.Exit)
	}
}
