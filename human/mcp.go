package human

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/flowerrun/flower/claude"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPServers returns the channel's in-process server under its name
// ("human"), for claude.Options.MCPServers or an AgentSpec. Every call
// returns the same server, so all sessions share one channel. An ask left
// unanswered gets the plain texts (Texts.TimeoutPlain…), which name no
// section of the brief; the clarifier's server is ClarifierMCPServers.
func (c *Channel) MCPServers() map[string]claude.MCPServer {
	// Always loaded: with tool search on (the CLI's default) the tools
	// would otherwise be deferred, and a clarifier whose first move is a
	// question would meet an unknown tool.
	return map[string]claude.MCPServer{Server: claude.SDKServer{Server: c.srv, AlwaysLoad: true}}
}

// ClarifierMCPServers is MCPServers for the clarifier: the same channel,
// whose unanswered asks get the seed's texts, which tell it to record the
// question and its assumption under the brief's "Unknowns and assumptions".
func (c *Channel) ClarifierMCPServers() map[string]claude.MCPServer {
	return map[string]claude.MCPServer{Server: claude.SDKServer{Server: c.clarifierSrv, AlwaysLoad: true}}
}

// addTools adds (or replaces, in the channel's current language) the tools
// of both MCP servers, the general one and the clarifier's.
func (c *Channel) addTools() {
	c.addServerTools(c.srv, false)
	c.addServerTools(c.clarifierSrv, true)
}

// addServerTools adds s's tools. Both tools take raw arguments and read
// them leniently: a model that sends a number for the question or objects
// among the options gets a settled ask, never a protocol error.
func (c *Channel) addServerTools(s *mcp.Server, clarifier bool) {
	t := c.Texts()
	s.AddTool(&mcp.Tool{
		Name:        "ask",
		Description: t.AskDescription,
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"question": map[string]any{"type": "string", "description": t.QuestionDescription},
				"options": map[string]any{
					"type": "array", "items": map[string]any{"type": "string"},
					"description": t.OptionsDescription,
				},
			},
			"required": []string{"question"},
		},
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return c.handleAsk(ctx, req, clarifier)
	})
	// No parameters, but a full schema: the CLI wants type and properties.
	s.AddTool(&mcp.Tool{
		Name:        "inbox",
		Description: t.InboxDescription,
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}},
	}, c.handleInbox)
}

func (c *Channel) handleAsk(ctx context.Context, req *mcp.CallToolRequest, clarifier bool) (*mcp.CallToolResult, error) {
	var args map[string]any
	if req != nil && req.Params != nil {
		// Unreadable arguments leave args empty: the ask settles Invalid.
		_ = json.Unmarshal(req.Params.Arguments, &args)
	}
	question, _ := scalar(args["question"])
	var options []string
	switch v := args["options"].(type) {
	case []any:
		for _, o := range v {
			if s, ok := scalar(o); ok {
				options = append(options, s)
			}
		}
	default:
		if s, ok := scalar(v); ok {
			options = []string{s}
		}
	}
	a, err := c.Ask(ctx, question, options)
	if err != nil {
		return nil, err
	}
	if !clarifier {
		return textResult(c.plain(a)), nil
	}
	return textResult(a.Answer), nil
}

func (c *Channel) handleInbox(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return textResult(c.TakeInbox()), nil
}

// scalar renders a JSON string, number or bool as text; other values (null,
// objects, arrays) are not text.
func scalar(v any) (string, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return "", false
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// plain is an ask's answer with a no-answer text that names the brief's
// sections replaced by its plain form, chosen by how the ask was settled
// (a reason the person gave stays after it); an answer is left as it is.
func (c *Channel) plain(a Ask) string {
	t := c.Texts()
	texts, ok := map[State][2]string{
		TimedOut:   {t.Timeout, t.TimeoutPlain},
		OverBudget: {t.OverBudget, t.OverBudgetPlain},
		Declined:   {t.Declined, t.DeclinedPlain},
	}[a.State]
	rest, cut := strings.CutPrefix(a.Answer, texts[0])
	if !ok || !cut || texts[0] == "" {
		return a.Answer
	}
	return texts[1] + rest
}
