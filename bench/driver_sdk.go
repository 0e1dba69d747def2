package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// drvInstallSDK is the driver benchmark's setup step: it installs the
// pinned TypeScript Agent SDK into cfg.sdkDir with npm (without its
// optional platform binaries: the benchmark points it at the same CLI as
// flower) unless that version is there already, and returns the path of
// its entry module. It needs node and npm, and the registry when the SDK
// is not installed yet; the error says which is missing.
func drvInstallSDK(ctx context.Context, cfg driverConfig) (string, error) {
	pkg := filepath.Join(cfg.sdkDir, "node_modules", filepath.FromSlash(drvSDKPackage))
	entry := filepath.Join(pkg, "sdk.mjs")
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("no node on PATH (%w); install Node.js 18 or later to compare with the TypeScript SDK", err)
	}
	if v, err := drvPackageVersion(pkg); err == nil && v == drvSDKVersion {
		if _, err := os.Stat(entry); err == nil {
			return entry, nil
		}
	}
	npm := cfg.npm
	if npm == "" {
		npm = "npm"
	}
	path, err := exec.LookPath(npm)
	if err != nil {
		return "", fmt.Errorf("no npm to install %s@%s (%w); install npm, or put the SDK in %s yourself", drvSDKPackage, drvSDKVersion, err, cfg.sdkDir)
	}
	if err := os.MkdirAll(cfg.sdkDir, 0o755); err != nil {
		return "", fmt.Errorf("a folder for the TypeScript SDK: %w", err)
	}
	manifest := filepath.Join(cfg.sdkDir, "package.json")
	if _, err := os.Stat(manifest); errors.Is(err, os.ErrNotExist) {
		// A package of its own, so npm installs here and not into a
		// package.json it finds further up.
		if err := os.WriteFile(manifest, []byte(`{"private": true, "description": "flower's driver benchmark: the TypeScript Agent SDK it compares with (git-ignored)"}`+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "install", "--omit=optional", "--no-audit", "--no-fund", "--loglevel=error",
		drvSDKPackage+"@"+drvSDKVersion)
	cmd.Dir = cfg.sdkDir
	drvOwnGroup(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("no answer in 3 minutes: %w", err)
		}
		return "", fmt.Errorf("npm install %s@%s failed (no network?): %w: %s", drvSDKPackage, drvSDKVersion, err, drvTail(out))
	}
	if v, err := drvPackageVersion(pkg); err != nil || v != drvSDKVersion {
		return "", fmt.Errorf("npm installed %s version %q (%v), not %s", drvSDKPackage, v, err, drvSDKVersion)
	}
	return entry, nil
}

func drvPackageVersion(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", err
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	return p.Version, nil
}
