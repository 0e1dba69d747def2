// Command flower runs a coding agent for hours without losing the thread;
// `flower --help` teaches it. The command is package app.
package main

import (
	"os"

	"github.com/flowerrun/flower/app"
)

func main() { os.Exit(app.Main(nil)) }
