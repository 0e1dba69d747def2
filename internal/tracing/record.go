package tracing

import (
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/flowerrun/flower/event"
)

// The attributes flower sets beside the GenAI semantic conventions'
// (gen_ai.*): what the conventions have no name for.
const (
	AttrCostUSD       = "flower.cost_usd"
	AttrCacheRead     = "flower.usage.cache_read_tokens"
	AttrCacheCreation = "flower.usage.cache_creation_tokens"
	AttrStep          = "flower.step"
	AttrRound         = "flower.round"
	AttrRole          = "flower.role"
	AttrOutcome       = "flower.outcome"
)

// usage is what a span's model requests or turns used and cost. Input
// counts every input token, cache reads and writes included, as
// gen_ai.usage.input_tokens asks (and as flower's tokens_in does).
type usage struct {
	input, output, cacheRead, cacheCreation int
	cost                                    float64
}

func (u *usage) add(o usage) {
	u.input += o.input
	u.output += o.output
	u.cacheRead += o.cacheRead
	u.cacheCreation += o.cacheCreation
	u.cost += o.cost
}

func (u usage) attrs() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.Int("gen_ai.usage.input_tokens", u.input),
		attribute.Int("gen_ai.usage.output_tokens", u.output),
		attribute.Int(AttrCacheRead, u.cacheRead),
		attribute.Int(AttrCacheCreation, u.cacheCreation),
		attribute.Float64(AttrCostUSD, u.cost),
	}
}

// open is a span not yet ended, with the time of the last event it saw
// (its end) and what its turns reported.
type open struct {
	span  trace.Span
	ctx   context.Context
	label string
	last  time.Time
	used  usage
}

func (o *open) seen(t time.Time) {
	if t.After(o.last) {
		o.last = t
	}
}

// request is a model request whose span waits for its message's last block.
type request struct {
	id   string
	span trace.Span
	last time.Time
}

// Recorder makes one run's spans from its events, in the order they come:
//
//   - the run span is made by NewRecorder and ended by End;
//   - a Step event starts a step span (ending the one before);
//   - a round is one label of the step (work, work#round2, work·judge#1):
//     it starts with the first event that names a new label (a session's
//     init, or the label the events log gives) and ends with the step or
//     the next label;
//   - each model request (an assistant message's id, once however many
//     blocks it was sent as) is a "chat {model}" span under its round (or,
//     for a subagent, under the Agent tool call that started it), from the
//     thread's previous event to its last block, with its tokens as the
//     stream reported them (the output count may be short: no cost);
//   - each tool call is an "execute_tool {tool}" span from the call to its
//     result;
//   - a turn's result adds its tokens and cost to its round, the round's to
//     its step, the steps' to the run: the round's cost is the manifest
//     row's, the run's the run's total.
//
// Events that carry no time are stamped when they arrive. Safe from any
// goroutine; events are taken one at a time.
type Recorder struct {
	tracer trace.Tracer

	mu      sync.Mutex
	run     *open
	step    *open
	round   *open
	tools   map[string]*open    // tool calls in flight, by id
	pending map[string]*request // per thread ("" the main thread, else the Agent call's id)
	lastOn  map[string]time.Time
	done    map[string]bool // model requests already spanned, by message id
	ended   bool
}

// NewRecorder starts the run's span, named "run {name}", as a child of the
// span in ctx when there is one (a team's attempt).
func NewRecorder(ctx context.Context, tracer trace.Tracer, name string, attrs ...attribute.KeyValue) *Recorder {
	start := time.Now()
	rctx, span := tracer.Start(ctx, strings.TrimSpace("run "+name), trace.WithTimestamp(start),
		trace.WithAttributes(append([]attribute.KeyValue{attribute.String("gen_ai.operation.name", "invoke_agent"),
			attribute.String("gen_ai.agent.name", "flower")}, attrs...)...))
	return &Recorder{
		tracer: tracer,
		run:    &open{span: span, ctx: rctx, label: name, last: start},
		tools:  map[string]*open{}, pending: map[string]*request{}, lastOn: map[string]time.Time{}, done: map[string]bool{},
	}
}

// Context is the run span's context: what a child process's spans would
// hang under.
func (r *Recorder) Context() context.Context { return r.run.ctx }

// Event records e. label is the round's label when the caller knows it
// (events.jsonl's step field), "" when it does not (the live sink, which
// learns it from each session's init).
func (r *Recorder) Event(label string, e event.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.run.seen(e.Time)
	thread := ""
	if e.Subagent() {
		thread = e.Str("parent_tool_use_id")
	}
	if e.Kind == event.Step {
		r.endStep()
		ctx, span := r.tracer.Start(r.run.ctx, "step "+e.Text, trace.WithTimestamp(e.Time),
			trace.WithAttributes(attribute.String(AttrStep, e.Text), attribute.Int("flower.step.index", e.Int("index")),
				attribute.Int("flower.step.total", e.Int("total")), attribute.Bool("flower.step.resumed", e.Bool("resumed"))))
		r.step = &open{span: span, ctx: ctx, label: e.Text, last: e.Time}
		return
	}
	isInit := e.Kind == event.System && e.Text == "init" && e.Str("step") != ""
	if isInit {
		label = e.Str("step")
	}
	// What the workflow says itself (a verdict, a goal) is logged under
	// the step's name: inside a round it is that round's, not a new one.
	// A session's init under the step's name is its first round.
	stepsOwn := r.step != nil && label == r.step.label && r.round != nil && !isInit
	if label != "" && !stepsOwn && (r.round == nil || r.round.label != label) {
		r.startRound(label, e)
	}
	if r.step != nil {
		r.step.seen(e.Time)
	}
	if r.round != nil {
		r.round.seen(e.Time)
	}
	parent := r.parentFor(thread)

	switch e.Kind {
	case event.Text, event.Thinking, event.ToolCall:
		r.modelRequest(thread, parent, e)
	default:
		r.endRequest(thread)
	}
	switch e.Kind {
	case event.ToolCall:
		id := e.Str("id")
		ctx, span := r.tracer.Start(parent, "execute_tool "+e.Tool, trace.WithTimestamp(e.Time),
			trace.WithAttributes(attribute.String("gen_ai.operation.name", "execute_tool"),
				attribute.String("gen_ai.tool.name", e.Tool), attribute.String("gen_ai.tool.call.id", id)))
		if id != "" {
			r.tools[id] = &open{span: span, ctx: ctx, label: e.Tool, last: e.Time}
		} else {
			span.End(trace.WithTimestamp(e.Time))
		}
	case event.ToolResult:
		if t := r.tools[e.Str("tool_use_id")]; t != nil {
			delete(r.tools, e.Str("tool_use_id"))
			if e.Bool("is_error") {
				t.span.SetStatus(codes.Error, clip(e.Text, 200))
			}
			t.span.End(trace.WithTimestamp(e.Time))
		}
	case event.Result:
		u := usage{input: e.Int("tokens_in"), output: e.Int("tokens_out"), cost: e.Float("cost_usd")}
		if r.round != nil {
			r.round.used.add(u)
		} else if r.step != nil {
			r.step.used.add(u)
		} else {
			r.run.used.add(u)
		}
		if e.Bool("is_error") && r.round != nil {
			r.round.span.SetStatus(codes.Error, clip(e.Str("result"), 200))
		}
	case event.Verdict, event.Retry, event.Handoff, event.Loop, event.Ask, event.Error:
		// What the run's own layers said, on the span it happened in.
		at := r.run
		if r.step != nil {
			at = r.step
		}
		if r.round != nil {
			at = r.round
		}
		at.span.AddEvent(string(e.Kind), trace.WithTimestamp(e.Time), trace.WithAttributes(eventAttrs(e)...))
		if e.Kind == event.Verdict && r.step != nil {
			r.step.span.SetAttributes(attribute.String("flower.verdict", e.Str("state")))
		}
	}
	r.lastOn[thread] = e.Time
}

// startRound ends the round in progress and starts the one of label.
func (r *Recorder) startRound(label string, e event.Event) {
	r.endRound()
	parent := r.run.ctx
	if r.step != nil {
		parent = r.step.ctx
	}
	attrs := []attribute.KeyValue{attribute.String(AttrRound, label), attribute.String("gen_ai.operation.name", "invoke_agent")}
	if role := e.Str("role"); role != "" {
		attrs = append(attrs, attribute.String(AttrRole, role), attribute.String("gen_ai.agent.name", role))
	}
	if sid := e.Str("session_id"); sid != "" {
		attrs = append(attrs, attribute.String("gen_ai.conversation.id", sid))
	}
	ctx, span := r.tracer.Start(parent, "round "+label, trace.WithTimestamp(e.Time), trace.WithAttributes(attrs...))
	r.round = &open{span: span, ctx: ctx, label: label, last: e.Time}
	r.lastOn = map[string]time.Time{"": e.Time}
}

// parentFor is where thread's spans go: a subagent's under the Agent call
// that started it, the main thread's under its round.
func (r *Recorder) parentFor(thread string) context.Context {
	if t := r.tools[thread]; thread != "" && t != nil {
		return t.ctx
	}
	if r.round != nil {
		return r.round.ctx
	}
	if r.step != nil {
		return r.step.ctx
	}
	return r.run.ctx
}

// modelRequest spans e's model request, once per message id: from the
// thread's last event before it (what the model was answering) to its
// message's last block.
func (r *Recorder) modelRequest(thread string, parent context.Context, e event.Event) {
	req, _ := e.Payload["request"].(map[string]any)
	id, _ := req["id"].(string)
	if id == "" {
		r.endRequest(thread)
		return
	}
	if p := r.pending[thread]; p != nil && p.id == id {
		if e.Time.After(p.last) {
			p.last = e.Time
		}
		return
	}
	r.endRequest(thread)
	if r.done[id] {
		return
	}
	r.done[id] = true
	start, ok := r.lastOn[thread]
	if !ok || start.After(e.Time) {
		start = e.Time
		if t := r.tools[thread]; thread != "" && t != nil {
			start = t.last
		}
	}
	model := e.Str("model")
	ev := event.Event{Payload: req}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.provider.name", "anthropic"),
		attribute.String("gen_ai.request.model", model),
		attribute.String("gen_ai.response.model", model),
		attribute.String("gen_ai.response.id", id),
		attribute.Bool("flower.subagent", thread != ""),
		// As the stream reported them: the output count may be short
		// of the final one, so no cost is made of it; the round's
		// totals come from the turns' results.
		attribute.Int("gen_ai.usage.input_tokens", ev.Int("input")+ev.Int("cache_read")+ev.Int("cache_creation")),
		attribute.Int("gen_ai.usage.output_tokens", ev.Int("output")),
		attribute.Int(AttrCacheRead, ev.Int("cache_read")),
		attribute.Int(AttrCacheCreation, ev.Int("cache_creation")),
	}
	_, span := r.tracer.Start(parent, strings.TrimSpace("chat "+model), trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	r.pending[thread] = &request{id: id, span: span, last: e.Time}
}

func (r *Recorder) endRequest(thread string) {
	if p := r.pending[thread]; p != nil {
		p.span.End(trace.WithTimestamp(p.last))
		delete(r.pending, thread)
	}
}

// endRound ends the round in progress: its requests and tool calls still
// open end with it (a tool call cut off by an interrupt or a kill).
func (r *Recorder) endRound() {
	for th := range r.pending {
		r.endRequest(th)
	}
	if r.round == nil {
		return
	}
	for id, t := range r.tools {
		t.span.SetStatus(codes.Error, "no result")
		t.span.End(trace.WithTimestamp(r.round.last))
		delete(r.tools, id)
	}
	r.round.span.SetAttributes(r.round.used.attrs()...)
	r.round.span.End(trace.WithTimestamp(r.round.last))
	if r.step != nil {
		r.step.used.add(r.round.used)
		r.step.seen(r.round.last)
	} else {
		r.run.used.add(r.round.used)
	}
	r.round = nil
}

func (r *Recorder) endStep() {
	r.endRound()
	if r.step == nil {
		return
	}
	r.step.span.SetAttributes(r.step.used.attrs()...)
	r.step.span.End(trace.WithTimestamp(r.step.last))
	r.run.used.add(r.step.used)
	r.step = nil
}

// End ends every open span and the run's, with its outcome ("" when not
// known) and the run's tokens and cost. Events after it are ignored.
func (r *Recorder) End(outcome string, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return
	}
	r.ended = true
	r.endStep()
	attrs := r.run.used.attrs()
	if outcome != "" {
		attrs = append(attrs, attribute.String(AttrOutcome, outcome))
	}
	r.run.span.SetAttributes(attrs...)
	if failed {
		r.run.span.SetStatus(codes.Error, outcome)
	}
	r.run.span.End()
}

func eventAttrs(e event.Event) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("flower.text", clip(e.Text, 500))}
	for _, k := range []string{"state", "reason", "phase", "step"} {
		if s := e.Str(k); s != "" {
			attrs = append(attrs, attribute.String("flower."+k, s))
		}
	}
	if n := e.Int("round"); n > 0 {
		attrs = append(attrs, attribute.Int(AttrRound+".number", n))
	}
	return attrs
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
