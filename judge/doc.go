// Package judge is the goal guard's judgement: the goal's checklist as
// items, the verdict a fresh judge session answers in structure (a schema
// flower owns, read from the CLI's structured_output), the evidence flower
// gathers itself before the judge reads anything (each command item run in
// a sandbox on a throwaway layer), the change report that shows the judge
// how the workspace moved since the goal was set, and the decision: flower
// decides the gate from the items, never from the conclusion's words.
//
// The root package's GoalStep and WithGoal build on it; what a user imports
// keeps its name there.
package judge
