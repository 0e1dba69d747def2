package guard

import "github.com/flowerrun/flower/claude"

// Whitelist is the wall of a role that is not a coordinator, with the
// default texts: see Texts.Whitelist.
func Whitelist(allowed []string, role string) claude.HookMatcher {
	return Texts{}.Whitelist(allowed, role)
}

// Whitelist is the wall of a role that is not a coordinator (the clarifier,
// the judge, the oracle): on the main thread only the tools in allowed
// (and AlwaysAllowed) pass, and the refusal says the lack is deliberate,
// naming role ("" means DefaultRole). The CLI's allowed tools only skip
// the approval prompt; this guard makes them exclusive. It dispatches no
// worker: an Agent call is refused even when allowed holds Agent (build a
// Wall with Workers for that).
func (t Texts) Whitelist(allowed []string, role string) claude.HookMatcher {
	return t.Wall(Wall{Role: role, Tools: allowed})
}

// Delegate is the coordinator's wall, with the default texts: see
// Texts.Delegate.
func Delegate(allowed, workers []string, allowGlance bool) claude.HookMatcher {
	return Texts{}.Delegate(allowed, workers, allowGlance)
}

// Delegate is the coordinator's wall: on the main thread only the tools in
// allowed (and AlwaysAllowed) pass, an Agent call only when it names one
// of workers, and Bash only as a glance (allowGlance and ephemeral.Is),
// bounded by DefaultGlanceTimeout. Every refusal tells the model to
// dispatch a subagent and to have it write long output into
// DefaultArtifacts. A worker costs thousands of tokens to start, a glance a
// few dozen characters: that is why glances pass.
func (t Texts) Delegate(allowed, workers []string, allowGlance bool) claude.HookMatcher {
	return t.Wall(Wall{Tools: allowed, Workers: workers, Glance: allowGlance, Delegate: true})
}
