package app

import (
	"context"
)

// runRun is `flower run`. Python's flower imported a module:attr at run
// time; Go cannot load code that way, so a workflow of your own is a Go
// program whose main is app.Main(yourFlow): it then takes this whole
// command line (flower's `go` flags, credentials, screen, exit codes).
func (m *Command) runRun(ctx context.Context, args []string) error {
	if m.Flow != nil {
		return m.runGo(ctx, args)
	}
	for _, a := range args {
		if a == "-h" || a == "--help" {
			_, err := m.Stdout.Write([]byte(m.runUsage()))
			return err
		}
	}
	return usageErrorf("`%s run` runs a workflow of your own; in Go that is a program whose main is app.Main(yourFlow): `%s run --help` shows one", m.name(), m.name())
}

const runExample = `    package main

    import (
        "context"
        "os"

        "github.com/flowerrun/flower/app"
    )

    func myFlow(ctx context.Context, cfg app.Config, ui *app.UI) error {
        // build a flower.Runtime in cfg.Workspace / cfg.RunDir and run your steps
        return nil
    }

    func main() { os.Exit(app.Main(myFlow)) }

then: go run . "build X" --rounds 2 -w ./repo`
