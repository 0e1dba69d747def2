// Command bench measures flower against what its users would run instead,
// side by side in one interleaved run: every variant of a figure is timed
// in the same process, against the same scripted fake Messages API on
// 127.0.0.1, and the ratios are printed with medians, minimums and maximums.
// Nothing here is a pass/fail condition of the ordinary tests.
//
//	go run ./bench            # every benchmark
//	go run ./bench NAME ...   # some of them; go run ./bench -h lists them
//	go run ./bench queue -runs 5 -rescue 10s   # a benchmark's own flags follow its name
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
)

// benchmark is one subcommand. Each file registers its own in an init
// function, so that benchmarks stay independent of each other.
type benchmark struct {
	name  string
	about string
	run   func(ctx context.Context) error
	// flags, when set, are the benchmark's own: they follow its name on
	// the command line.
	flags *flag.FlagSet
}

var benchmarks = map[string]benchmark{}

func register(b benchmark) {
	if _, dup := benchmarks[b.name]; dup {
		panic("bench: two benchmarks named " + b.name)
	}
	benchmarks[b.name] = b
}

func names() []string {
	var ns []string
	for n := range benchmarks {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: go run ./bench [NAME ...]\n\nBenchmarks (all of them when none is named):\n")
	for _, n := range names() {
		fmt.Fprintf(os.Stderr, "  %-14s %s\n", n, benchmarks[n].about)
		if fs := benchmarks[n].flags; fs != nil {
			fs.SetOutput(os.Stderr)
			fs.PrintDefaults()
		}
	}
}

// chooseBenchmarks reads the command line's benchmark names, each
// followed by its own flags; none named is all of them.
func chooseBenchmarks(args []string) ([]string, error) {
	if len(args) == 0 {
		return names(), nil
	}
	var chosen []string
	for len(args) > 0 {
		n := args[0]
		b, ok := benchmarks[n]
		if !ok {
			return nil, fmt.Errorf("no benchmark %q (known: %s)", n, strings.Join(names(), ", "))
		}
		chosen = append(chosen, n)
		args = args[1:]
		if b.flags != nil {
			if err := b.flags.Parse(args); err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			args = b.flags.Args()
		}
	}
	return chosen, nil
}

func main() {
	flag.Usage = usage
	flag.Parse()
	chosen, err := chooseBenchmarks(flag.Args())
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	failed := 0
	for _, n := range chosen {
		fmt.Printf("== %s: %s\n", n, benchmarks[n].about)
		if err := benchmarks[n].run(ctx); err != nil {
			// One variant's failure stops that benchmark, never the others.
			fmt.Printf("%s: stopped: %v\n", n, err)
			failed++
		}
	}
	if failed > 0 {
		os.Exit(1)
	}
}
