package main

// coordinator: the same scripted calls done the flower way, a coordinator
// dispatching workers that each do PerWorker calls and answer in the
// four-part report, against the plain CLI doing all of them itself. The
// coordinator's process ends after half the workers and its session is
// resumed for the rest, as the long session's is.

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/flowerrun/flower"
	"github.com/flowerrun/flower/claude"
	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/store"
)

func init() {
	register(benchmark{
		name:  "coordinator",
		about: "context economy of a coordinator: 10 workers of 20 calls each vs the plain CLI doing all 200",
		run: func(ctx context.Context) error {
			cfg, err := econConfigFromEnv()
			if err != nil {
				return err
			}
			_, err = econBench(ctx, cfg, econCoordinatorVariants, econPrintCoordinator)
			return err
		},
	})
}

var econCoordinatorVariants = []econVariant{
	econSessionVariants[0],
	{"flower-coordinator", "a coordinator (flower.Coordinator) dispatching workers (flower.Worker), configured as `flower go` runs (workbench, spill, trim, expiry, pruning)", econCoordinator},
}

const (
	econLead1    = "ECON:lead1 Dispatch the scripted work to the runners."
	econLead2    = "ECON:lead2 Go on dispatching the scripted work."
	econLeadDone = "every worker reported"
)

// econWorkerMarker selects worker w's script.
func econWorkerMarker(w int) string { return fmt.Sprintf("ECON:worker%02d", w) }

// econReport is worker w's four-part report on calls from..to-1 (the
// worker rules' format, 30 lines at most).
func econReport(calls []econCall, from, to int) string {
	var wrote []string
	counts := map[string]int{}
	for _, c := range calls[from:to] {
		counts[c.Kind]++
		if c.Kind == "write" {
			wrote = append(wrote, c.Path)
		}
	}
	out := "none"
	if len(wrote) > 0 {
		out = fmt.Sprint(wrote)
	}
	return fmt.Sprintf("Conclusion: calls %d to %d done.\n"+
		"Evidence: %d files read, %d test logs (all PASS), %d glances, %d notes written.\n"+
		"Output: %s\n"+
		"Unverified / risks: none; the logs' full text is in the spill files.",
		from, to-1, counts["cat"], counts["run"], counts["glance"], counts["write"], out)
}

// econCoordinator runs the work as a coordinator of workers through two
// Runtimes, the first process ending after half the workers.
func econCoordinator(ctx context.Context, r *econRun) error {
	per := max(r.cfg.PerWorker, 1)
	workers := (r.cfg.Calls + per - 1) / per
	split := (workers + 1) / 2
	script := claudetest.Script{}
	dispatch := func(w int) claudetest.Reply {
		from, to := w*per, min((w+1)*per, r.cfg.Calls)
		return claudetest.NewReply(claudetest.ToolUse(fmt.Sprintf("toolu_lead_%02d", w), "Agent", map[string]any{
			"description":       fmt.Sprintf("calls %d to %d", from, to-1),
			"prompt":            fmt.Sprintf("%s Run the scripted calls %d to %d.", econWorkerMarker(w), from, to-1),
			"subagent_type":     "runner",
			"run_in_background": false,
		}))
	}
	var lead1, lead2 []claudetest.Responder
	for w := 0; w < workers; w++ {
		from, to := w*per, min((w+1)*per, r.cfg.Calls)
		script[econWorkerMarker(w)] = r.fake.turns(from, to, econReport(r.calls, from, to))
		if w < split {
			lead1 = append(lead1, dispatch(w))
		} else {
			lead2 = append(lead2, dispatch(w))
		}
	}
	script["ECON:lead1"] = append(lead1, claudetest.Say(econLeadDone))
	script["ECON:lead2"] = append(lead2, claudetest.Say(econLeadDone))
	if err := r.serve(script); err != nil {
		return err
	}
	lead := flower.Coordinator("lead", "", map[string]claude.AgentDefinition{
		"runner": flower.Worker("runs scripted calls", "You run the calls the task names.",
			flower.WithTools("Bash", "Read", "Write", "Edit", "Glob", "Grep"), flower.WithLang(flower.English)),
	}, flower.WithLang(flower.English))
	return r.twoRuntimes(ctx, lead, econLead1, econLeadDone, econLead2, econLeadDone,
		[]flower.Option{flower.WithDefaultWorkbench(), flower.WithTrim(store.TrimPolicy{})})
}

// econPrintCoordinator prints the coordinator's figures against plain's:
// main-thread bytes, all bytes, the largest main-thread request, ratios.
func econPrintCoordinator(w io.Writer, variants []econVariant, results [][]econFigures) {
	plain := results[0]
	pAll := econOf(plain, func(f econFigures) float64 { return float64(f.Bytes) })
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tmain requests\tmain MB\tplain ÷ main\tall requests\tall MB\tplain ÷ all\tlargest main MB\tread-back of pointed bytes\twall s")
	for vi, v := range variants {
		fs := results[vi]
		main := econOf(fs, func(f econFigures) float64 { return float64(f.MainBytes) })
		all := econOf(fs, func(f econFigures) float64 { return float64(f.Bytes) })
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f×\t%s\t%s\t%.1f×\t%s\t%s\t%s\n", v.name,
			econOf(fs, func(f econFigures) float64 { return float64(f.MainRequests) }).fmt(1, 0),
			main.fmt(econMB, 2), pAll.med/main.med,
			econOf(fs, func(f econFigures) float64 { return float64(f.Requests) }).fmt(1, 0),
			all.fmt(econMB, 2), pAll.med/all.med,
			econOf(fs, func(f econFigures) float64 { return float64(f.MainLargest) }).fmt(econMB, 3),
			econReadback(fs[0]),
			econOf(fs, func(f econFigures) float64 { return f.Wall.Seconds() }).fmt(1, 1))
	}
	tw.Flush()
	for vi, v := range variants {
		fmt.Fprintf(w, "\n%s: %s\nmain thread:\n", v.name, v.about)
		econPrintParts(w, results[vi][0].Parts, results[vi][0].MainRequests)
		if sub := results[vi][0].Requests - results[vi][0].MainRequests; sub > 0 {
			fmt.Fprintln(w, "subagents:")
			econPrintParts(w, results[vi][0].SubParts, sub)
		}
	}
	econPrintPrices(w, variants, results)
}
