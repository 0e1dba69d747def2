package flower

import (
	"reflect"

	"github.com/flowerrun/flower/claude"
)

// The human channel's MCP server and tool names, as the CLI calls them.
const (
	// ChannelServer is the name of the channel's MCP server.
	ChannelServer = "human"
	// AskTool asks the human a question and blocks until an answer, a
	// timeout or a refusal settles it.
	AskTool = "mcp__" + ChannelServer + "__ask"
	// InboxTool returns what the human said since the last look; it never
	// blocks.
	InboxTool = "mcp__" + ChannelServer + "__inbox"
)

// Channel is what the roles need of a human channel: the MCP servers that
// expose its tools. A channel serves one in-process server named
// ChannelServer ("human") with the tools ask and inbox (AskTool,
// InboxTool). The roles that take a channel add its tools to their allowed
// tools and its servers to the spec's MCPServers. Package human implements
// it; any type with the method will do.
type Channel interface {
	MCPServers() map[string]claude.MCPServer
}

// noChannel reports whether ch is no channel: nil, or a nil pointer (a nil
// *human.Channel passed as a Channel is not a nil interface, and calling
// it would panic).
func noChannel(ch Channel) bool {
	if ch == nil {
		return true
	}
	v := reflect.ValueOf(ch)
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return v.IsNil()
	}
	return false
}
