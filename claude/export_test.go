package claude

import "time"

// SetControlTrace installs the control-request trace for benchmarks.
func SetControlTrace(f func(received, replied time.Time)) { controlTrace = f }

// Args exposes the argument builder to the table tests.
func (o *Options) Args() ([]string, error) { return o.args() }

// ChildEnv exposes the environment builder to the tests.
func (o *Options) ChildEnv() []string { return o.childEnv(nil) }

// SafeSubpath exposes the subpath check to the tests.
var SafeSubpath = safeSubpath

// Wire exposes a permission answer's wire form to the tests.
func (r PermissionResult) Wire(original []byte) map[string]any { return r.wire(original) }
