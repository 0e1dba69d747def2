package flower_test

import (
	"context"
	"fmt"

	"github.com/flowerrun/flower"
)

// ExampleStarterFlow shows the wiring a driver owes the starter flow: the
// Runtime gets the workflow's workbench, run directory and language.
func ExampleStarterFlow() {
	o := flower.StarterOptions{Workspace: "."}
	wake, err := flower.WakeState(o) // writes nothing
	if err != nil {
		fmt.Println(err)
		return
	}
	wf, err := flower.StarterFlow("build me a hello.txt generator", o)
	if err != nil {
		fmt.Println(err)
		return
	}
	rt, err := flower.New(".", flower.WithRunDir(wake.RunDir), flower.WithWorkbench(wf.Workbench), flower.WithLanguage(wake.Lang))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	c, err := wf.Run(context.Background(), rt, nil, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	if at, failed := c.FailedAt(); failed {
		fmt.Println("stopped at", at)
	}
}
