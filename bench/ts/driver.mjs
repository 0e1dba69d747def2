// Drives the official TypeScript Agent SDK through the driver benchmark's
// scripted session, with the same trivial PreToolUse and PostToolUse hooks
// on every tool as flower's variant, and prints one JSON line of timings.
// bench/driver.go runs it; the configuration comes on stdin:
//   {"sdk": entry module, "cli": claude binary, "cwd", "prompt", "env", "path"}
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const cfg = JSON.parse(readFileSync(0, 'utf8'));
const { query } = await import(pathToFileURL(cfg.sdk).href);

// Wall-clock milliseconds with a fraction, comparable with Go's time.Now.
const now = () => performance.timeOrigin + performance.now();

const pre = new Map();
const gapsUs = [];
const onPre = async (input, toolUseID) => {
  if (input.tool_name === 'Bash') pre.set(toolUseID, now());
  return {};
};
const onPost = async (input, toolUseID) => {
  const t = now();
  if (input.tool_name === 'Bash' && pre.has(toolUseID)) {
    gapsUs.push((t - pre.get(toolUseID)) * 1000);
    pre.delete(toolUseID);
  }
  return {};
};

const startMs = now();
let result;
for await (const m of query({
  prompt: cfg.prompt,
  options: {
    pathToClaudeCodeExecutable: cfg.cli,
    cwd: cfg.cwd,
    env: { PATH: cfg.path, ...cfg.env },
    permissionMode: 'acceptEdits',
    systemPrompt: { type: 'preset', preset: 'claude_code' },
    settingSources: [],
    hooks: {
      PreToolUse: [{ hooks: [onPre] }],
      PostToolUse: [{ hooks: [onPost] }],
    },
  },
})) {
  if (m.type === 'result') result = m;
}
const endMs = now();
process.stdout.write(JSON.stringify({
  startMs, endMs, gapsUs,
  got: result !== undefined,
  isError: result?.is_error ?? false,
  result: result?.result ?? result?.subtype ?? '',
}) + '\n');
