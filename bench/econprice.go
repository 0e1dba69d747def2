package main

// What the economy benchmarks' requests cost a user: every request priced
// by the fake's prompt-cache model (fakeapi.PromptCache: cache reads at a
// tenth, writes at 1.25×, plain input after the last breakpoint, output at
// 5×, tokens as bytes/4), in input-token equivalents, on two timelines.

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/flowerrun/flower/claude/claudetest"
	"github.com/flowerrun/flower/claude/fakeapi"
)

// The two timelines a run's requests are priced on.
const (
	// timelineOwn: each request at the moment it reached the fake, as the
	// benchmark ran (tool calls take milliseconds; the cache never expires).
	timelineOwn = "own timing"
	// timelineSlow: each tool call takes 20 s and every tenth a 6-minute
	// build, so a cache not read for 5 minutes has expired.
	timelineSlow = "20 s calls, every 10th 6 min"
)

// econSlowGap is the simulated time before the n-th request (n ≥ 1): the
// tool call it answers.
func econSlowGap(n int) time.Duration {
	if n%10 == 0 {
		return 6 * time.Minute
	}
	return 20 * time.Second
}

// Price parts beside the byte parts: what the model writes.
const partOutput = "model output (tool calls and texts it wrote)"

// econPrice is a run's price in input-token equivalents, in all and by
// request part, and what the same requests would cost with no cache.
type econPrice struct {
	Total, NoCache float64
	// Main is the main thread's share of Total.
	Main  float64
	Parts map[string]float64
	// Zones is Total by where the tokens were priced: cache read, cache
	// write, plain input, output.
	Zones map[string]float64
}

// econPriceRun prices reqs in their order, request n at at(n).
func econPriceRun(reqs []*claudetest.Request, at func(n int, r *claudetest.Request) time.Time,
	calls []econCall, outputs map[string]string) econPrice {
	p := econPrice{Parts: map[string]float64{}, Zones: map[string]float64{}}
	cache := fakeapi.NewPromptCache(nil)
	for n, r := range reqs {
		if r.Err != nil {
			continue
		}
		priced, err := cache.PriceAt(r.Body, at(n, r))
		if err != nil {
			continue
		}
		before := p.Total
		for _, s := range priced.Segments {
			tokens := float64(len(s.Raw)) / fakeapi.BytesPerToken
			price := tokens * s.Zone.Price()
			p.Total += price
			p.NoCache += tokens
			p.Zones[s.Zone.String()] += price
			econSegmentParts(s, calls, outputs, price, p.Parts)
		}
		out := fakeapi.OutputPrice * float64(r.Usage.OutputTokens)
		p.Total += out
		p.NoCache += out
		p.Zones["output"] += out
		p.Parts[partOutput] += out
		if !r.Subagent {
			p.Main += p.Total - before
		}
	}
	return p
}

// econSegmentParts adds a segment's price to the part it is, as econParts
// divides bytes (a spill pointer's preview apart).
func econSegmentParts(s fakeapi.Segment, calls []econCall, outputs map[string]string, price float64, parts map[string]float64) {
	switch {
	case s.Field == "tools":
		parts[partTools] += price
		return
	case s.Field == "system":
		parts[partSystem] += price
		return
	case s.Role == "system":
		parts[partSysEntry] += price
		return
	case len(s.Raw) > 0 && s.Raw[0] == '"':
		parts[partText] += price
		return
	}
	part := econBlockPart(s.Raw, calls, outputs)
	if part == partSpill {
		var r struct {
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(s.Raw, &r)
		if _, preview, ok := strings.Cut(econContentText(r.Content), "\n"); ok {
			share := min(float64(len(preview))/float64(len(s.Raw)), 1)
			parts[partPreview] += price * share
			price -= price * share
		}
	}
	parts[part] += price
}

// econPrices prices a run on both timelines.
func econPrices(reqs []*claudetest.Request, calls []econCall, outputs map[string]string) map[string]econPrice {
	var t0 time.Time
	if len(reqs) > 0 {
		t0 = reqs[0].At
	}
	slow := t0
	return map[string]econPrice{
		timelineOwn: econPriceRun(reqs, func(_ int, r *claudetest.Request) time.Time { return r.At }, calls, outputs),
		timelineSlow: econPriceRun(reqs, func(n int, _ *claudetest.Request) time.Time {
			if n > 0 {
				slow = slow.Add(econSlowGap(n))
			}
			return slow
		}, calls, outputs),
	}
}

const econMtok = 1e6

// econPrintPrices prints every variant's price on both timelines against
// plain's (the first variant), then where each variant's price goes.
func econPrintPrices(w io.Writer, variants []econVariant, results [][]econFigures) {
	fmt.Fprintf(w, "\nPrice in millions of input-token equivalents (tokens = bytes/%d; cache read ×%.1f, cache write ×%.2f, output ×%.0f; 5-minute TTL)\n",
		fakeapi.BytesPerToken, fakeapi.CacheReadPrice, fakeapi.CacheWritePrice, fakeapi.OutputPrice)
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tbytes: plain ÷ variant\tprice, "+timelineOwn+"\tplain ÷ variant\tprice, "+timelineSlow+
		"\tplain ÷ variant\tprice with no cache\tmain thread's share")
	plainBytes := econOf(results[0], func(f econFigures) float64 { return float64(f.Bytes) }).med
	plain := map[string]float64{}
	for _, tl := range []string{timelineOwn, timelineSlow} {
		plain[tl] = econOf(results[0], func(f econFigures) float64 { return f.Price[tl].Total }).med
	}
	for vi, v := range variants {
		fs := results[vi]
		own := econOf(fs, func(f econFigures) float64 { return f.Price[timelineOwn].Total })
		slow := econOf(fs, func(f econFigures) float64 { return f.Price[timelineSlow].Total })
		bytes := econOf(fs, func(f econFigures) float64 { return float64(f.Bytes) }).med
		fmt.Fprintf(tw, "%s\t%.1f×\t%s\t%.1f×\t%s\t%.1f×\t%s\t%.0f%%\n", v.name, plainBytes/bytes,
			own.fmt(econMtok, 3), plain[timelineOwn]/own.med,
			slow.fmt(econMtok, 3), plain[timelineSlow]/slow.med,
			econOf(fs, func(f econFigures) float64 { return f.Price[timelineOwn].NoCache }).fmt(econMtok, 3),
			100*fs[0].Price[timelineOwn].Main/max(fs[0].Price[timelineOwn].Total, 1))
	}
	tw.Flush()
	for vi, v := range variants {
		for _, tl := range []string{timelineOwn, timelineSlow} {
			fmt.Fprintf(w, "\n%s, %s: where the price goes\n", v.name, tl)
			econPrintPriceParts(w, results[vi][0].Price[tl])
		}
	}
}

// econPrintPriceParts prints a price by zone, then by part.
func econPrintPriceParts(w io.Writer, p econPrice) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  by zone\tMtok-eq\tshare\t\n")
	for _, z := range []string{fakeapi.Read.String(), fakeapi.Write.String(), fakeapi.Input.String(), "output"} {
		if n := p.Zones[z]; n > 0 {
			fmt.Fprintf(tw, "  %s\t%.3f\t%.1f%%\t\n", z, n/econMtok, 100*n/p.Total)
		}
	}
	fmt.Fprintf(tw, "  by part\t\t\t\n")
	for _, part := range append(econPartOrder, partOutput) {
		if n := p.Parts[part]; n > 0 {
			fmt.Fprintf(tw, "  %s\t%.3f\t%.1f%%\t\n", part, n/econMtok, 100*n/p.Total)
		}
	}
	tw.Flush()
}
