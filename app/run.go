package app

import (
	"context"
)

// runRun is `flower run`. Python's flower imported a module:attr at run
// time; Go cannot load code that way, so a workflow of your own is a Go
// program whose main is app.Main(workflow) or app.MainFunc(build): it then takes this whole
// command line (flower's `go` flags, credentials, screen, exit codes).
func (m *Command) runRun(ctx context.Context, args []string) error {
	if m.Program != nil {
		return m.runGo(ctx, args)
	}
	for _, a := range args {
		if a == "-h" || a == "--help" {
			m.printHelp(m.runUsage(m.argLang(args)))
			return nil
		}
	}
	return usageErrorf(text(m.argLang(args), "runNoProgram"), m.name(), m.name())
}

const runExample = `    package main

    import (
        "context"
        "os"

        "github.com/flowerrun/flower"
        "github.com/flowerrun/flower/app"
    )

    func build(ctx context.Context, cfg app.Config,
        ui *app.UI) (*flower.Workflow, error) {
        spec := flower.AgentSpec{Name: "coder",
            AllowedTools: []string{"Read", "Edit", "Bash"}}
        plan := flower.Text("Plan, do not edit: " + cfg.Request)
        return &flower.Workflow{Steps: []flower.Step{
            {Name: "plan", Spec: spec, Prompt: plan},
            {Name: "build", Spec: spec, ResumeFrom: "plan",
                Prompt: flower.Text("Now do it.")},
        }}, nil
    }

    func main() { os.Exit(app.MainFunc(build)) }

Then: go run . -w ./repo "add a --json flag" (examples/ownflow is this program).`
