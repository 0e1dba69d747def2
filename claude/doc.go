// Package claude drives the Claude Code CLI (the claude binary) the way the
// official Claude Agent SDK does: stream-json over stdin and stdout plus the
// control protocol, with hooks, the permission callback and in-process MCP
// servers answered in this process.
//
// Query runs one prompt and yields the CLI's messages; Client keeps a
// session open for several prompts. The package knows nothing of flower and
// is usable alone as a Go Agent SDK.
package claude
