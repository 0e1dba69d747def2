// Command teamflow is the team tests' workflow program: a planning step
// that may ask the human, then a step continuing the planner's session to
// do the work. Built on package app, it takes flower's whole command line
// (worker, submit, runs, reply, cancel, report).
package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/app"
	"github.com/flowerrun/flower/human"
)

func build(ctx context.Context, cfg app.Config, ui *app.UI) (*flower.Workflow, error) {
	ch := human.New(human.WithTimeout(cfg.AskTimeout))
	spec := flower.AgentSpec{Name: "coder", AllowedTools: []string{"Read", "Bash", flower.AskTool},
		PermissionMode: "acceptEdits", MCPServers: ch.MCPServers()}
	build := flower.Step{Name: "build", Spec: spec, ResumeFrom: "plan", Prompt: flower.Text("Now make the change you planned.")}
	if strings.Contains(cfg.Request, "rounds") {
		// A step that may take three rounds: its step event says so,
		// while it works its first.
		build.Retries = 2
	}
	if strings.Contains(cfg.Request, "judged") {
		// A goal its build is judged against, round by round (two at
		// most): the run writes a verdict event for each.
		goal := filepath.Join(cfg.Workspace, ".flower", "goal.md")
		if err := os.MkdirAll(filepath.Dir(goal), 0o700); err != nil {
			return nil, err
		}
		if err := os.WriteFile(goal, []byte("## Goal\nThe task file is written\n\n## Checklist\n- [c1] the task file holds the task's name\n"), 0o600); err != nil {
			return nil, err
		}
		build = flower.WithGoal(build, ch, flower.GoalGuardOptions{GoalPath: goal, Rounds: 2, Lang: "en"})
	}
	return &flower.Workflow{Channel: ch, Steps: []flower.Step{
		{Name: "plan", Spec: spec, Prompt: flower.Text("Plan the change, do not edit yet: " + cfg.Request)},
		build,
	}}, nil
}

func main() { os.Exit(app.MainFunc(build)) }
