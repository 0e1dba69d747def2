// Package faults is the fault-injection suite: each TestFault… case drives
// the pinned real CLI against claudetest's fake Messages API (through the
// library, and through a workflow binary where the case says so), injects
// one fault, states what must hold afterwards and checks it. TestMain
// prints "fault suite: N passed, N failed, N not run" when the cases have
// run, on stderr and, when $FLOWER_FAULT_SUMMARY names a file, into it
// (scripts/test prints that file: go test hides a passing package's
// output). A case that cannot be simulated on the machine is counted as
// not run with its reason, and fails under $CI, where every case must run.
package faults
