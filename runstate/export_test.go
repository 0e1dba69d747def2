package runstate

import "time"

// stopForTest stops the heartbeat and the syncs without writing back or
// releasing: what a killed process leaves.
func (m *Mirror) stopForTest() {
	m.close.Do(func() {
		close(m.quit)
		<-m.done
	})
}

// shortRacyWindow makes a file's identity trusted soon after it was
// written, for the test's length.
func shortRacyWindow(t interface{ Cleanup(func()) }, d time.Duration) {
	old := racyWindow
	racyWindow = d
	t.Cleanup(func() { racyWindow = old })
}
