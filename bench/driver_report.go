package main

import (
	"fmt"
	"io"
	"time"
)

// drvReport prints the driver benchmark's table, the goal and the price
// of the walls.
func drvReport(out io.Writer, cfg driverConfig, variants []drvVariant, runs map[string][]drvRun) {
	med := map[string]time.Duration{}
	for _, v := range variants {
		if rs := runs[v.name]; len(rs) > 0 {
			med[v.name] = drvSpreadOf(drvWalls(rs)).med
		}
	}
	ratio := func(name, to string) string {
		if med[name] == 0 || med[to] == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", float64(med[name])/float64(med[to]))
	}
	rows := [][]string{{"variant", "wall median [min … max]", "÷bare", "÷ts-sdk", "spawn→1st req", "per request", "last req→end", "Pre→Post p50", "p99", "in guards/call"}}
	for _, v := range variants {
		rs := runs[v.name]
		if len(rs) == 0 {
			continue
		}
		var spawn, per, shut, gaps []time.Duration
		var guards time.Duration
		for _, r := range rs {
			n := len(r.reqs)
			spawn = append(spawn, r.reqs[0].Sub(r.start))
			if n > 1 {
				per = append(per, r.reqs[n-1].Sub(r.reqs[0])/time.Duration(n-1))
			}
			shut = append(shut, r.end.Sub(r.reqs[n-1]))
			gaps = append(gaps, r.gaps...)
			guards += r.guardTime
		}
		row := []string{v.name, drvSpreadOf(drvWalls(rs)).String(), ratio(v.name, "bare"), ratio(v.name, "ts-sdk"),
			drvDur(drvSpreadOf(spawn).med), drvDur(drvSpreadOf(per).med), drvDur(drvSpreadOf(shut).med), "-", "-", "-"}
		if v.hooked {
			row[7], row[8] = drvDur(drvPercentile(gaps, 50)), drvDur(drvPercentile(gaps, 99))
		}
		if v.guarded {
			row[9] = drvDur(guards / time.Duration(len(rs)*cfg.calls))
		}
		rows = append(rows, row)
	}
	fmt.Fprint(out, drvTable(rows))
	for _, v := range variants {
		fmt.Fprintf(out, "  %-19s %s\n", v.name+":", v.about)
	}
	fmt.Fprintln(out, "  spawn→1st req: from the call (or exec) to the fake API's first request; per request: between requests, one tool call's round;")
	fmt.Fprintln(out, "  last req→end: from the last request to the result read and the process gone; Pre→Post: a call's PreToolUse to its PostToolUse callback")
	switch {
	case med["flower"] == 0 || med["ts-sdk"] == 0:
		fmt.Fprintln(out, "goal (hooked flower never slower than the TS SDK): not measured, a variant is missing")
	default:
		verdict := "met"
		if med["flower"] > med["ts-sdk"] {
			verdict = "missed"
		}
		fmt.Fprintf(out, "goal (hooked flower never slower than the TS SDK): flower %s, ts-sdk %s, %s: %s\n",
			drvDur(med["flower"]), drvDur(med["ts-sdk"]), ratio("flower", "ts-sdk"), verdict)
	}
	for _, g := range []string{"flower+coordinator", "flower+worker"} {
		if med[g] == 0 || med["flower"] == 0 {
			continue
		}
		var in time.Duration
		for _, r := range runs[g] {
			in += r.guardTime
		}
		fmt.Fprintf(out, "price of the walls (%s): %s a tool call over plain hooked flower (wall), %s of it inside flower's guard hooks\n",
			g, drvSigned((med[g]-med["flower"])/time.Duration(cfg.calls)), drvDur(in/time.Duration(len(runs[g])*cfg.calls)))
	}
}

func drvWalls(rs []drvRun) []time.Duration {
	var ws []time.Duration
	for _, r := range rs {
		ws = append(ws, r.wall)
	}
	return ws
}

// drvSigned is a duration with its sign, for a difference.
func drvSigned(d time.Duration) string {
	if d < 0 {
		return "-" + drvDur(-d)
	}
	return "+" + drvDur(d)
}
