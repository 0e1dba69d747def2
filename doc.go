// Package flower runs Claude Code agents for hours or days without losing
// the thread.
//
// It drives the Claude Code CLI through package claude and adds what long
// runs need: a coordinator whose main thread never touches files and
// dispatches workers (subagents) that answer in a short four-part report; a
// clarifier that freezes a four-part brief; a judge that sets a checkable
// goal and rules each round achieved, not yet or unreachable; handoff
// documents instead of native compaction; continuity across processes;
// resilience to API faults; and a session store that keeps what a resumed
// session is fed small.
//
// This package is the face users import. An agent is declared as an
// AgentSpec, usually made by one of the five role factories (Coordinator,
// Worker, Clarify, Judge, Oracle), and compiled to the driver's options by
// BuildOptions. The rule texts the roles carry and the fixed prompts of the
// runtime are embedded files under prompts/<lang>/, readable through
// PromptsFor and PromptFiles.
//
// A Workflow runs Steps in order on a Runtime: each step is one
// Runtime.Run (and its retries), its value goes into a Ctx under its name,
// and a Gate, OnReject and OnFail decide what a step that did not pass
// does. By default a workflow is continuous: a Lineage in the run
// directory remembers each step's session the moment it is known, and the
// next run on that directory continues it.
//
// StarterFlow is the ready-made workflow the flower command runs: clarify
// (ClarifyStep), goal (GoalStep) and work under the goal guard (WithGoal),
// continuing where the last run stopped (WakeState tells whether it will),
// and leaving a short hand-over in CLAUDE.md and AGENTS.md at the end (the
// bequest). It is a sample to copy as much as a tool: the steps it is made
// of are public.
//
// Imports only point down:
//
//	cmd/flower                         the command
//	flower (this package)              specs, roles, prompts, runtime, workflow
//	human, guard, doc, store           channel, hook guards, documents, session stores
//	workbench, ephemeral, event, claude
//
// Package claude imports nothing of flower and is usable alone as a Go Agent
// SDK; no package imports this one.
//
// Texts come in two languages, chosen by Lang: English (the zero Lang) and
// Chinese (which reproduces the original flower's literals). One setting on
// the Runtime (WithLanguage) reaches every role, starter step and human
// channel it runs that chose none.
package flower
