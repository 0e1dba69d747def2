#!/usr/bin/env bash
# Installs a pinned Claude Code CLI with npm and prints the path of the
# platform binary, which the tests run directly (the npm bin entry is only a
# stub when install scripts are off).
#
#   install.sh [DIR]
#
# DIR holds the pin (package.json + package-lock.json): this folder by
# default (the newest tested CLI); tools/claude-cli-2.1.310 pins the oldest.
# One script for every pin, so each version is installed and checked the
# same way.
set -euo pipefail
here=${1:-$(dirname "$0")}
if ! here=$(cd "$here" 2>/dev/null && pwd) || [ ! -f "$here/package-lock.json" ]; then
  echo "install.sh: ${1:-$(dirname "$0")} holds no package.json + package-lock.json pin of the Claude Code CLI" >&2
  exit 1
fi
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
  # postinstall only links it onto the stub, which we do not use. npm install
  # --no-save takes the lock's versions and integrity hashes as npm ci does,
  # but tolerates an optional platform package the registry does not serve:
  # 2.1.310 names win32 packages that the registry answers with 404, and npm
  # ci refuses such a lock. The version check below is what guarantees the pin.
  npm install --no-save --ignore-scripts --no-audit --no-fund --loglevel=error >&2
  [ -x "$bin" ] || chmod +x "$bin"
  have=$("$bin" --version | awk '{print $1}')
fi
if [ "$have" != "$want" ]; then
  echo "install.sh: $bin reports version ${have:-(none)}, want $want (pinned in $here/package.json); delete $here/node_modules and run again" >&2
  exit 1
fi
echo "$bin"
