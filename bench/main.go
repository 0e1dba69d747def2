// Command bench measures flower against what its users would run instead,
// side by side in one interleaved run: every variant of a figure is timed
// in the same process, against the same scripted fake Messages API on
// 127.0.0.1, and the ratios are printed with medians, minimums and maximums.
// Nothing here is a pass/fail condition of the ordinary tests.
//
//	go run ./bench            # every benchmark
//	go run ./bench NAME ...   # some of them; go run ./bench -h lists them
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
	}
}

func main() {
	flag.Usage = usage
	flag.Parse()
	chosen := flag.Args()
	if len(chosen) == 0 {
		chosen = names()
	}
	for _, n := range chosen {
		if _, ok := benchmarks[n]; !ok {
			fmt.Fprintf(os.Stderr, "bench: no benchmark %q (known: %s)\n", n, strings.Join(names(), ", "))
			os.Exit(2)
		}
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
