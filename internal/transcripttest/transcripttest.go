// Package transcripttest generates realistic Claude Code transcripts for tests
// and benchmarks of session stores and of the layers that trim them: user
// prompts, assistant tool calls (Bash, Read, Grep) with usage, and tool
// results of varied sizes, chained by parentUuid as the CLI writes them.
package transcripttest

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Cwd and GitBranch are the values every generated entry carries.
const (
	Cwd       = "/home/dev/shop"
	GitBranch = "main"
	Version   = "2.1.220"
	Model     = "claude-sonnet-4-5-20250929"
)

// Generate returns n transcript entries of one session, the same for the same
// seed. The session is a run of turns: a user prompt, one to six tool cycles
// (an assistant tool_use of Bash, Read or Grep, then a user entry with its
// tool_result and toolUseResult), and an assistant text reply. Tool result
// contents vary from a line to over 6,000 characters (about one in eight is
// over 2,000), and Bash calls include read-only commands such as git status
// and ls whose results go stale. Every entry has uuid, parentUuid (null for
// the first), timestamp, sessionId, cwd, gitBranch and isSidechain false;
// assistant entries carry message.usage with a context that grows along the
// session. Entries average about 1.2 KB. When n cuts a tool cycle short, the
// last entry may be a tool_use without its result, as after an interrupt.
// n <= 0 gives nil.
func Generate(n int, seed int64) []json.RawMessage {
	if n <= 0 {
		return nil
	}
	g := &generator{
		rng:  rand.New(rand.NewPCG(uint64(seed), 0x9e3779b97f4a7c15)),
		time: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC),
	}
	g.time = g.time.Add(time.Duration(g.rng.IntN(86400)) * time.Second)
	g.session = g.uuid()
	g.context = 9000 + g.rng.IntN(4000) // system prompt and tools
	out := make([]json.RawMessage, 0, n)
	for len(out) < n {
		out = g.turn(out, n)
	}
	return out
}

// SessionID returns the sessionId the entries of Generate(n, seed) carry.
func SessionID(seed int64) string {
	e := Generate(1, seed)
	var v struct {
		SessionID string `json:"sessionId"`
	}
	_ = json.Unmarshal(e[0], &v)
	return v.SessionID
}

type generator struct {
	rng     *rand.Rand
	time    time.Time
	session string
	parent  string
	context int // tokens the next request sends
	toolID  int
}

func (g *generator) turn(out []json.RawMessage, n int) []json.RawMessage {
	prompt := prompts[g.rng.IntN(len(prompts))]
	out = append(out, g.user(prompt, nil))
	g.context += len(prompt)/4 + 10
	cycles := 1 + g.rng.IntN(6)
	for c := 0; c < cycles && len(out) < n; c++ {
		call := g.toolCall()
		out = append(out, g.assistant([]any{call.block}, "tool_use"))
		if len(out) == n {
			return out
		}
		out = append(out, g.user(nil, &call))
		g.context += len(call.result)/4 + 60
	}
	if len(out) < n {
		text := replies[g.rng.IntN(len(replies))]
		out = append(out, g.assistant([]any{map[string]any{"type": "text", "text": text}}, "end_turn"))
		g.context += len(text) / 4
	}
	return out
}

type toolCall struct {
	block  map[string]any
	id     string
	result string
	extra  map[string]any // toolUseResult
}

func (g *generator) toolCall() toolCall {
	g.toolID++
	id := fmt.Sprintf("toolu_01%s%06d", g.hex(14), g.toolID)
	var c toolCall
	switch r := g.rng.IntN(10); {
	case r < 5:
		cmd, out := g.bash()
		c = toolCall{
			block:  map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": cmd, "description": "Run " + strings.Fields(cmd)[0]}},
			result: out,
			extra:  map[string]any{"stdout": out, "stderr": "", "interrupted": false, "isImage": false},
		}
	case r < 8:
		file := files[g.rng.IntN(len(files))]
		content, lines := g.fileContent()
		c = toolCall{
			block:  map[string]any{"type": "tool_use", "id": id, "name": "Read", "input": map[string]any{"file_path": Cwd + "/" + file}},
			result: content,
			extra: map[string]any{"type": "text", "file": map[string]any{
				"filePath": Cwd + "/" + file, "numLines": lines, "startLine": 1, "totalLines": lines,
			}},
		}
	default:
		pattern := words[g.rng.IntN(len(words))]
		out, count := g.grep()
		c = toolCall{
			block:  map[string]any{"type": "tool_use", "id": id, "name": "Grep", "input": map[string]any{"pattern": pattern, "output_mode": "files_with_matches"}},
			result: out,
			extra:  map[string]any{"mode": "files_with_matches", "numFiles": count},
		}
	}
	c.id = id
	return c
}

func (g *generator) bash() (cmd, out string) {
	switch r := g.rng.IntN(8); r {
	case 0, 1:
		return "git status", g.gitStatus()
	case 2:
		return "ls -la", g.lsOutput()
	case 3:
		return "git log --oneline -10", g.gitLog()
	case 4, 5:
		return "go test ./...", g.testOutput()
	case 6:
		return "git diff --stat", g.diffStat()
	default:
		big := g.lines(40+g.rng.IntN(90), func(i int) string {
			return fmt.Sprintf("%s:%d: %s", files[g.rng.IntN(len(files))], 1+g.rng.IntN(400), code[g.rng.IntN(len(code))])
		})
		return "grep -rn TODO .", big
	}
}

func (g *generator) gitStatus() string {
	var b strings.Builder
	fmt.Fprintf(&b, "On branch %s\nYour branch is up to date with 'origin/%s'.\n\nChanges not staged for commit:\n  (use \"git add <file>...\" to update what will be committed)\n  (use \"git restore <file>...\" to discard changes in working directory)\n", GitBranch, GitBranch)
	for i := 0; i < 1+g.rng.IntN(8); i++ {
		fmt.Fprintf(&b, "\tmodified:   %s\n", files[g.rng.IntN(len(files))])
	}
	if g.rng.IntN(2) == 0 {
		b.WriteString("\nUntracked files:\n  (use \"git add <file>...\" to include in what will be committed)\n")
		for i := 0; i < 1+g.rng.IntN(4); i++ {
			fmt.Fprintf(&b, "\t%s\n", files[g.rng.IntN(len(files))]+".orig")
		}
	}
	b.WriteString("\nno changes added to commit (use \"git add\" and/or \"git commit -a\")")
	return b.String()
}

func (g *generator) lsOutput() string {
	return "total 96\n" + g.lines(6+g.rng.IntN(14), func(i int) string {
		return fmt.Sprintf("-rw-r--r--  1 dev dev %6d Jan  5 09:%02d %s", 200+g.rng.IntN(40000), g.rng.IntN(60), files[g.rng.IntN(len(files))])
	})
}

func (g *generator) gitLog() string {
	return g.lines(10, func(i int) string {
		subject := []rune(replies[g.rng.IntN(len(replies))])
		return g.hex(7) + " " + string(subject[:min(len(subject), 30)])
	})
}

func (g *generator) testOutput() string {
	if g.rng.IntN(4) == 0 {
		return "--- FAIL: TestCheckout (0.01s)\n    checkout_test.go:48: total = 1999, want 2000\nFAIL\nFAIL\tgithub.com/dev/shop/cart\t0.012s\n" +
			g.lines(3+g.rng.IntN(6), func(i int) string { return fmt.Sprintf("ok  \tgithub.com/dev/shop/pkg%d\t0.%03ds", i, g.rng.IntN(999)) })
	}
	return g.lines(3+g.rng.IntN(10), func(i int) string {
		return fmt.Sprintf("ok  \tgithub.com/dev/shop/pkg%d\t0.%03ds", i, g.rng.IntN(999))
	})
}

func (g *generator) diffStat() string {
	n := 1 + g.rng.IntN(7)
	return g.lines(n, func(i int) string {
		return fmt.Sprintf(" %-40s | %3d %s", files[g.rng.IntN(len(files))], 1+g.rng.IntN(80), strings.Repeat("+", 1+g.rng.IntN(20)))
	}) + fmt.Sprintf("\n %d files changed, %d insertions(+), %d deletions(-)", n, g.rng.IntN(300), g.rng.IntN(100))
}

func (g *generator) fileContent() (string, int) {
	var n int
	switch r := g.rng.IntN(8); {
	case r < 5:
		n = 5 + g.rng.IntN(25) // a short file or a slice of one
	case r < 7:
		n = 30 + g.rng.IntN(40)
	default:
		n = 80 + g.rng.IntN(120) // well over 2,000 characters
	}
	return g.lines(n, func(i int) string {
		return fmt.Sprintf("%6d→%s", i+1, code[g.rng.IntN(len(code))])
	}), n
}

func (g *generator) grep() (string, int) {
	n := 1 + g.rng.IntN(12)
	return fmt.Sprintf("Found %d files\n", n) + g.lines(n, func(i int) string {
		return Cwd + "/" + files[g.rng.IntN(len(files))]
	}), n
}

func (g *generator) lines(n int, line func(i int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line(i))
	}
	return b.String()
}

// user returns a prompt entry (prompt non-nil) or a tool result entry.
func (g *generator) user(prompt any, call *toolCall) json.RawMessage {
	e := g.common("user")
	if call == nil {
		e["message"] = map[string]any{"role": "user", "content": prompt}
	} else {
		e["message"] = map[string]any{"role": "user", "content": []any{map[string]any{
			"tool_use_id": call.id, "type": "tool_result", "content": call.result, "is_error": false,
		}}}
		e["toolUseResult"] = call.extra
	}
	return g.finish(e)
}

func (g *generator) assistant(content []any, stop string) json.RawMessage {
	e := g.common("assistant")
	created := 20 + g.rng.IntN(900)
	output := 30 + g.rng.IntN(400)
	e["message"] = map[string]any{
		"id": "msg_01" + g.hex(22), "type": "message", "role": "assistant", "model": Model,
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens":                1 + g.rng.IntN(8),
			"cache_creation_input_tokens": created,
			"cache_read_input_tokens":     g.context,
			"output_tokens":               output,
			"service_tier":                "standard",
		},
	}
	e["requestId"] = "req_011C" + g.hex(20)
	g.context += created + output
	return g.finish(e)
}

func (g *generator) common(typ string) map[string]any {
	e := map[string]any{
		"isSidechain": false, "userType": "external", "cwd": Cwd, "sessionId": g.session,
		"version": Version, "gitBranch": GitBranch, "type": typ,
	}
	if g.parent == "" {
		e["parentUuid"] = nil
	} else {
		e["parentUuid"] = g.parent
	}
	return e
}

func (g *generator) finish(e map[string]any) json.RawMessage {
	id := g.uuid()
	e["uuid"] = id
	g.time = g.time.Add(time.Duration(200+g.rng.IntN(30000)) * time.Millisecond)
	e["timestamp"] = g.time.Format("2006-01-02T15:04:05.000Z")
	g.parent = id
	b, err := json.Marshal(e)
	if err != nil {
		panic(err) // unreachable: only maps, slices, strings, numbers and bools
	}
	return b
}

func (g *generator) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

func (g *generator) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(16)]
	}
	return string(b)
}

var prompts = []string{
	"The checkout total is off by one cent for some carts. Find out why and fix it, with a test.",
	"run the tests and tell me what fails",
	"Add pagination to the /orders endpoint: limit and cursor query parameters, default limit 50.",
	"看一下 cart 包里的舍入逻辑，为什么总价会少一分钱？",
	"Refactor the discount rules into one table-driven function. Keep the behaviour identical.",
	"what does git status say now?",
	"The CI log shows a data race in inventory.Reserve. Reproduce it with -race and fix it.",
	"Write a README section on how prices are rounded (banker's rounding? half-up?).",
	"continue",
	"Please review store/orders.go for error handling that loses the cause (no %w).",
}

var replies = []string{
	"Fixed: the rounding happened per line instead of on the total. Added TestCheckoutRoundsOnce; all tests pass.",
	"Three packages fail: cart (rounding), inventory (a race in Reserve) and api (a stale golden file). Details below.",
	"Pagination is in: limit (default 50, max 500) and an opaque cursor. Handler tests cover the edges.",
	"原因是每一行先四舍五入再求和。已改为对总价四舍五入一次，并补了测试。",
	"The discount rules now live in one table; the old tests pass unchanged and I added two for stacking.",
	"Working tree has 4 modified files, nothing staged.",
	"Reserve read the stock map without the lock. It now takes the mutex; go test -race ./... is clean.",
	"Added a Rounding section to the README: half-up on the order total, never per line.",
}

var files = []string{
	"cart/cart.go", "cart/cart_test.go", "cart/rounding.go", "api/orders.go", "api/orders_test.go",
	"api/testdata/orders.golden", "inventory/reserve.go", "inventory/reserve_test.go", "store/orders.go",
	"store/schema.sql", "discount/rules.go", "discount/rules_test.go", "README.md", "go.mod", "cmd/shop/main.go",
}

var words = []string{"Reserve", "roundTotal", "TODO", "cursor", "ErrNotFound", "func Test", "mu.Lock"}

var code = []string{
	"package cart",
	"",
	"import (",
	"\t\"errors\"",
	"\t\"fmt\"",
	")",
	"// Total returns the cart total in cents, rounded half-up once.",
	"func (c *Cart) Total() (int64, error) {",
	"\tvar sum big.Rat",
	"\tfor _, line := range c.Lines {",
	"\t\tsum.Add(&sum, line.Price.Mul(line.Qty))",
	"\t}",
	"\treturn roundHalfUp(&sum), nil",
	"}",
	"\tif err != nil {",
	"\t\treturn nil, fmt.Errorf(\"orders: load %s: %w\", id, err)",
	"\tinv.mu.Lock()",
	"\tdefer inv.mu.Unlock()",
	"\t// TODO: cap the page size at 500",
	"\tlimit := parseLimit(r.URL.Query().Get(\"limit\"), 50)",
	"func TestCheckoutRoundsOnce(t *testing.T) {",
	"\tif got, want := c.Total(), int64(2000); got != want {",
	"\t\tt.Fatalf(\"total = %d, want %d\", got, want)",
	"CREATE TABLE orders (id TEXT PRIMARY KEY, total INTEGER NOT NULL, created_at TEXT NOT NULL);",
	"| Rounding | half-up on the total | never per line |",
}
