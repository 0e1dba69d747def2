package team

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/flowerrun/flower/internal/gitwork"
)

// A run's environment starts empty: of a worker's environment full of
// tokens (a dashboard's, GitHub's, AWS's, an agent socket, a trace
// collector's), a run gets only the listed names and those the operator
// passes; what the worker sets comes on top, and a passed value holding
// a secret of the team's is still left out.
func TestARunGetsOnlyTheListedVariablesOfItsWorker(t *testing.T) {
	t.Parallel()
	base := []string{
		"PATH=/usr/bin:/bin", "LANG=zh_CN.UTF-8", "LC_ALL=zh_CN.UTF-8", "TZ=Asia/Shanghai", "TERM=xterm",
		"DISABLE_TELEMETRY=1",
		"FLOWER_SERVE_TOKEN=serve-token-0123456789", "GITHUB_TOKEN=ghp_0123456789abcdef",
		"AWS_SECRET_ACCESS_KEY=aws-secret-0123456789", "SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
		"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer s3cret", "OTEL_SERVICE_NAME=svc",
		"ANTHROPIC_API_KEY=sk-ant-worker", "FLOWER_DATABASE_URL=postgres://x", "PGPASSWORD=pw",
		"HOME=/root", "GOPROXY=https://proxy.example", "NPM_TOKEN=npm-token-0123456789",
		"HTTPS_PROXY=http://user:pw-0123456789@proxy",
	}
	env := runEnv(base, []string{"GOPROXY", "HTTPS_PROXY"}, map[string]string{"HOME": "/run/home", "ANTHROPIC_API_KEY": "flower-run-token"}, "pw-0123456789")
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		got[k] = v
	}
	want := map[string]string{
		"PATH": "/usr/bin:/bin", "LANG": "zh_CN.UTF-8", "LC_ALL": "zh_CN.UTF-8", "TZ": "Asia/Shanghai", "TERM": "xterm",
		"DISABLE_TELEMETRY": "1", "GOPROXY": "https://proxy.example",
		"HOME": "/run/home", "ANTHROPIC_API_KEY": "flower-run-token",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("the run's %s is %q, want %q", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("the run got the worker's %s=%s", k, v)
		}
	}
}

func TestPassEnvTakesVariableNamesButNotTheTeamsOwn(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"GOPROXY", "npm_config_registry", "_X1"} {
		if err := CheckPassEnv(name); err != nil {
			t.Errorf("CheckPassEnv(%q) = %v", name, err)
		}
	}
	for _, name := range []string{"", "1X", "A=B", "A B", "FLOWER_DATABASE_URL", "PGPASSWORD", "DATABASE_URL", "OTEL_EXPORTER_OTLP_HEADERS"} {
		if err := CheckPassEnv(name); err == nil {
			t.Errorf("CheckPassEnv(%q) took it", name)
		}
	}
}

// The push scan looks for every value of the worker's environment no run
// gets, but values that are no secret: paths of this machine, numbers,
// switches, the shell and the user.
func TestTheWorkersUnpassedValuesAreSecretsToThePushScan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := []string{
		"GITHUB_TOKEN=ghp_0123456789abcdef", "FLOWER_SERVE_TOKEN=serve-token-0123456789",
		"AWS_SECRET_ACCESS_KEY=aws-secret-0123456789", "SSH_AUTH_SOCK=" + dir,
		"SHELL=/bin/bash", "HOME=" + dir, "GOPATH=" + dir + ":" + os.TempDir(), "JOBS=12345678",
		"FEATURE=disabled-but-long", "VERBOSE=true", "SHORT=abc", "PATH=/usr/bin:/definitely/not/here",
		"GOPROXY=https://proxy.example/with/long/path", "LC_ALL=en_US.UTF-8-long",
	}
	got := envSecretValues(env, []string{"GOPROXY"})
	want := []string{"ghp_0123456789abcdef", "serve-token-0123456789", "aws-secret-0123456789", "disabled-but-long"}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the push scan's values: %q, want %q", got, want)
	}
	secrets := pushSecrets(env, []string{"GOPROXY"}, "postgres://u:dbpass-0123@h/db", "")
	for _, v := range want {
		if !slices.ContainsFunc(secrets, func(s gitwork.Secret) bool { return s.Value == v }) {
			t.Errorf("pushSecrets lacks %q", v)
		}
	}
}
