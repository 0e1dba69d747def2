package runstate

// stopForTest stops the heartbeat and the syncs without writing back or
// releasing: what a killed process leaves.
func (m *Mirror) stopForTest() {
	m.close.Do(func() {
		close(m.quit)
		<-m.done
	})
}
