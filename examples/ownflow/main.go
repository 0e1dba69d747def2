// Command ownflow is a workflow program of its own built on package app: a
// planning step, then a step that continues the planner's session to do
// the work. It takes flower's whole command line:
//
//	go run ./examples/ownflow -w ./repo "add a --json flag" --budget 5
//	go run ./examples/ownflow -w ./repo          (asks for the request)
package main

import (
	"context"
	"os"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/app"
)

func build(ctx context.Context, cfg app.Config, ui *app.UI) (*flower.Workflow, error) {
	if cfg.Request == "" {
		// Bare `ownflow`: ask, as bare `flower` does.
		req, err := ui.AskRequest(ctx, false)
		if err != nil {
			return nil, err
		}
		cfg.Request = req.Text
	}
	spec := flower.AgentSpec{Name: "coder", AllowedTools: []string{"Read", "Glob", "Grep", "Edit", "Write", "Bash"}, PermissionMode: "acceptEdits"}
	return &flower.Workflow{Steps: []flower.Step{
		{Name: "plan", Spec: spec, Prompt: flower.Text("Plan the change, do not edit yet: " + cfg.Request)},
		{Name: "build", Spec: spec, ResumeFrom: "plan", Prompt: flower.Text("Now make the change you planned.")},
	}}, nil
}

func main() { os.Exit(app.MainFunc(build)) }
