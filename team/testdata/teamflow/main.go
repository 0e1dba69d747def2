// Command teamflow is the team tests' workflow program: a planning step
// that may ask the human, then a step continuing the planner's session to
// do the work. Built on package app, it takes flower's whole command line
// (worker, submit, runs, reply, cancel, report).
package main

import (
	"context"
	"os"
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
	return &flower.Workflow{Channel: ch, Steps: []flower.Step{
		{Name: "plan", Spec: spec, Prompt: flower.Text("Plan the change, do not edit yet: " + cfg.Request)},
		build,
	}}, nil
}

func main() { os.Exit(app.MainFunc(build)) }
