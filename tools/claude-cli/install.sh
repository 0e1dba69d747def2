#!/usr/bin/env bash
# Installs the pinned Claude Code CLI (package.json + package-lock.json here)
# with npm and prints the path of the platform binary, which the tests run
# directly (the npm bin entry is only a stub when install scripts are off).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64)  platform=linux-x64 ;;
  Linux-aarch64) platform=linux-arm64 ;;
  Darwin-arm64)  platform=darwin-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  *) echo "install.sh: no Claude Code binary package for $(uname -s)-$(uname -m)" >&2; exit 1 ;;
esac
bin="$here/node_modules/@anthropic-ai/claude-code-$platform/claude"
want=$(node -p 'require("./package.json").dependencies["@anthropic-ai/claude-code"]')

have=""
[ -x "$bin" ] && have=$("$bin" --version 2>/dev/null | awk '{print $1}') || true
if [ "$have" != "$want" ]; then
  # --ignore-scripts: the binary arrives as an ordinary registry package; the
  # postinstall only links it onto the stub, which we do not use.
  npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >&2
  [ -x "$bin" ] || chmod +x "$bin"
  have=$("$bin" --version | awk '{print $1}')
fi
if [ "$have" != "$want" ]; then
  echo "install.sh: $bin reports version $have, want $want" >&2
  exit 1
fi
echo "$bin"
