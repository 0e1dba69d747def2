package judge

import "time"

// Measurement is flower's own run of one command item. (Placeholder until
// measure.go lands.)
type Measurement struct {
	Item        Item
	Exit        int
	TimedOut    bool
	Environment string
	Head, Tail  string
	Bytes       int64
	Duration    time.Duration
	Sandbox     string
	Err         string
}
