package ephemeral

import "strings"

// verbRule is how one allowed verb is checked.
type verbRule struct {
	// openArgs: no option or operand of the verb writes, runs a command or
	// waits forever, so arguments the shell expands ($HOME, *.go) are fine.
	openArgs bool
	// check sees the arguments after the verb.
	check func(args []word) bool
}

// printsOnly is the rule of a verb whose every use only prints.
var printsOnly = verbRule{openArgs: true, check: anyArgs}

// verbs are the allowed first words, lowercase. The seed's list, with
// each verb's options that write a file, change state, run another
// command or never end refused. htop is left out: it has no batch mode.
var verbs = map[string]verbRule{
	"git": {check: gitIsQuery},

	// Directory and system information.
	"ls": printsOnly, "ll": printsOnly, "dir": printsOnly, "pwd": printsOnly,
	"df": printsOnly, "du": printsOnly, "uptime": printsOnly,
	"whoami": printsOnly, "id": printsOnly, "printenv": printsOnly,
	"free":     {check: refuse("sc", "seconds", "count")}, // -s repeats until killed
	"date":     {check: dateIsQuery},
	"hostname": {check: hostnameIsQuery},
	"env":      {check: noArgs}, // env FOO=1 cmd runs cmd

	// Processes and containers.
	"ps": printsOnly, "pgrep": printsOnly,
	"top":       {check: topIsBatch},
	"jobs":      {check: refuse("x")}, // jobs -x cmd runs cmd
	"lsof":      {check: refuse("r")}, // -r and +r repeat until killed
	"netstat":   {check: netstatIsSnapshot},
	"ss":        {check: refuse("KDE", "kill", "diag", "events")}, // kill sockets, dump to a file, watch
	"systemctl": {check: systemctlIsStatus},
	"docker":    {check: dockerIsQuery},
	"kubectl":   {check: kubectlIsGet},

	// Viewing files.
	"cat": printsOnly, "head": printsOnly, "wc": printsOnly,
	"stat": printsOnly, "echo": printsOnly,
	"tail": {check: refuse("fF", "follow")}, // follows forever
	"file": {check: refuse("C", "compile")}, // -C writes a compiled magic file
	"find": {check: findIsReadOnly},
	"tree": {check: refuse("oR", "output")}, // -o writes a file, -R writes 00Tree.html everywhere

	// Text processing.
	"grep": printsOnly, "egrep": printsOnly, "fgrep": printsOnly, "jq": printsOnly,
	"cut": printsOnly, "tr": printsOnly, "column": printsOnly, "nl": printsOnly,
	"rev": printsOnly, "comm": printsOnly, "diff": printsOnly,
	// rg --pre and --hostname-bin run a program; sort -o writes, -T
	// spills temporary files, --compress-program runs one.
	"rg":   {check: refuse("", "pre", "pre-glob", "hostname-bin")},
	"sort": {check: refuse("oT", "output", "compress-program", "temporary-directory")},
	"uniq": {check: uniqIsReadOnly},
	"awk":  {check: awkIsReadOnly},
	"sed":  {check: sedIsReadOnly},

	// Looking up commands and the platform.
	"which": printsOnly, "whereis": printsOnly, "type": printsOnly,
	"locale": printsOnly, "nproc": printsOnly, "getconf": printsOnly, "sw_vers": printsOnly,
	"command": {check: commandIsQuery},
	"uname":   {check: refuse("S")}, // -S sets the host name on some systems
	"arch":    {check: noArgs},      // arch -x86_64 cmd runs cmd on macOS
}

func anyArgs([]word) bool { return true }

func noArgs(args []word) bool { return len(args) == 0 }

// refuse makes a rule that rejects the given options wherever they
// appear: short ones also inside clusters (-nf) and after + (tail +5f,
// lsof +r); long ones also abbreviated, as getopt_long takes --out for
// --output.
func refuse(short string, long ...string) func([]word) bool {
	return func(args []word) bool {
		for _, a := range args {
			if namesOption(a.text, short, long) {
				return false
			}
		}
		return true
	}
}

func namesOption(arg, short string, long []string) bool {
	if strings.HasPrefix(arg, "--") {
		if arg == "--" {
			return false
		}
		name, _, _ := strings.Cut(arg[2:], "=")
		for _, l := range long {
			if strings.HasPrefix(l, name) {
				return true
			}
		}
		return false
	}
	if len(arg) > 1 && (arg[0] == '-' || arg[0] == '+') {
		return strings.ContainsAny(arg[1:], short)
	}
	return false
}

// findRefused are the primaries that run commands, delete or write files;
// -newer is refused because the seed did.
var findRefused = []string{"-exec", "-ok", "-delete", "-fprint", "-fls", "-newer"}

func findIsReadOnly(args []word) bool {
	for _, a := range args {
		arg := strings.ToLower(a.text)
		for _, p := range findRefused {
			if strings.HasPrefix(arg, p) {
				return false
			}
		}
	}
	return true
}

var uniqOptions = options("cdDiuz f:s:w:",
	"count repeated all-repeated=? group=? ignore-case unique zero-terminated skip-fields= skip-chars= check-chars= help version")

// uniqIsReadOnly allows one operand at most: uniq IN OUT writes OUT.
func uniqIsReadOnly(args []word) bool {
	p, ok := uniqOptions.parse(args)
	if !ok || len(p.operands) > 1 {
		return false
	}
	for _, o := range p.operands {
		if o.uncertain() { // a glob may name two files
			return false
		}
	}
	return true
}

var sedOptions = options("nErsuz e:l:",
	"quiet silent regexp-extended separate unbuffered null-data zero-terminated posix debug sandbox help version expression= line-length=")

// sedIsReadOnly refuses in-place editing (-i, -I, --in-place, -i.bak,
// -ni), script files (-f) and scripts that write or run (see sed.go).
func sedIsReadOnly(args []word) bool {
	p, ok := sedOptions.parse(args)
	if !ok {
		return false
	}
	var scripts []word
	for _, o := range p.options {
		if o.name == "-e" || o.name == "--expression" {
			scripts = append(scripts, o.value)
		}
	}
	if len(scripts) == 0 {
		if len(p.operands) == 0 {
			return false
		}
		scripts = p.operands[:1]
	}
	for _, s := range scripts {
		if s.uncertain() || !sedScriptIsReadOnly(s.text) {
			return false
		}
	}
	return true
}

var awkOptions = options("F:v:", "field-separator= assign= sandbox posix traditional help version")

// awkIsReadOnly takes the program from the command line only (no -f, -e,
// -i, -l: they load code from files) and checks it. gawk opens a file
// operand named /inet/tcp/… as a network connection; those are refused.
func awkIsReadOnly(args []word) bool {
	p, ok := awkOptions.parse(args)
	if !ok || len(p.operands) == 0 {
		return false
	}
	for _, o := range p.operands {
		if strings.Contains(o.text, "/inet") {
			return false
		}
	}
	prog := p.operands[0]
	return !prog.uncertain() && awkProgramIsReadOnly(prog.text)
}

// awkRefused are the ways an awk program runs commands or reaches beyond
// its input: system(), pipes to and from commands (print | "cmd", "cmd" |
// getline, |&), getline from files or network, gawk's @ (indirect calls
// such as @f() with f = "system", @load, @include), the environment, and
// gawk's /inet special files (as when BEGIN rewrites ARGV).
var awkRefused = []string{"system", "|", "getline", "@", "environ", "/inet"}

// awkProgramIsReadOnly does not parse awk. It refuses every program that
// could write or run: any of awkRefused, and any > after the first print,
// since an output redirection (print > f, printf(…) >> f) follows its
// print keyword while a comparison like NR > 1 usually comes before.
func awkProgramIsReadOnly(prog string) bool {
	p := strings.ToLower(prog)
	for _, r := range awkRefused {
		if strings.Contains(p, r) {
			return false
		}
	}
	if i := strings.Index(p, "print"); i >= 0 && strings.Contains(p[i:], ">") {
		return false
	}
	return true
}

var dateOptions = options("uR d:r:I::",
	"utc universal rfc-email rfc-2822 debug help version date= reference= rfc-3339= iso-8601=?")

// dateIsQuery refuses setting the clock: -s/--set, and an operand that is
// not a +FORMAT (date MMDDhhmm sets the time, on GNU and BSD alike).
func dateIsQuery(args []word) bool {
	p, ok := dateOptions.parse(args)
	if !ok {
		return false
	}
	for _, o := range p.operands {
		if !strings.HasPrefix(o.text, "+") {
			return false
		}
	}
	return true
}

var hostnameOptions = options("fiIsdaA",
	"fqdn long short domain ip-address all-ip-addresses all-fqdns alias help version")

// hostnameIsQuery refuses hostname NAME and -F FILE, which set it.
func hostnameIsQuery(args []word) bool {
	p, ok := hostnameOptions.parse(args)
	return ok && len(p.operands) == 0
}

var topOptions = options("bcHiS n:d:p:l:o:", "")

// topIsBatch allows top only when it stops by itself: batch mode with an
// iteration count (top -b -n 1) or macOS's logging mode (top -l 1).
func topIsBatch(args []word) bool {
	p, ok := topOptions.parse(args)
	if !ok || len(p.operands) > 0 {
		return false
	}
	batch, count := false, false
	for _, o := range p.options {
		switch o.name {
		case "-b":
			batch = true
		case "-n":
			count = isPositive(o.value.text)
		case "-l":
			if !isPositive(o.value.text) { // -l 0 logs forever
				return false
			}
			batch, count = true, true
		}
	}
	return batch && count
}

func isPositive(s string) bool {
	return isDigits(s) && strings.TrimLeft(s, "0") != ""
}

// netstatIsSnapshot refuses -c (continuous), macOS's -w WAIT and the
// Linux interval operand (netstat 2): all repeat until killed.
func netstatIsSnapshot(args []word) bool {
	for _, a := range args {
		if !strings.HasPrefix(a.text, "-") || namesOption(a.text, "cw", []string{"continuous", "wait"}) {
			return false
		}
	}
	return true
}

var commandOptions = options("pvV", "")

// commandIsQuery allows command -v and -V only: plain command foo runs foo.
func commandIsQuery(args []word) bool {
	p, ok := commandOptions.parse(args)
	if !ok {
		return false
	}
	for _, o := range p.options {
		if o.name == "-v" || o.name == "-V" {
			return true
		}
	}
	return false
}

// dockerIsQuery allows docker ps, docker images and docker stats
// --no-stream (without it stats streams forever). Global options such as
// -H (another daemon) are refused by requiring the subcommand first.
func dockerIsQuery(args []word) bool {
	if len(args) == 0 {
		return false
	}
	sub, _ := asciiLower(args[0].text)
	switch sub {
	case "ps", "images":
		return true
	case "stats":
		for _, a := range args[1:] {
			if a.text == "--no-stream" {
				return true
			}
		}
	}
	return false
}

// kubectlOptions leave out --kubeconfig (its exec plugins run commands),
// -w/--watch (never ends), and klog's --log-file and --profile-output,
// which write files.
var kubectlOptions = options("A n:o:l:L:",
	"all-namespaces show-labels no-headers show-kind ignore-not-found help "+
		"namespace= output= selector= field-selector= label-columns= sort-by= context= cluster= chunk-size= request-timeout=")

func kubectlIsGet(args []word) bool {
	if len(args) == 0 {
		return false
	}
	if sub, _ := asciiLower(args[0].text); sub != "get" {
		return false
	}
	_, ok := kubectlOptions.parse(args[1:])
	return ok
}

// systemctlOptions leave out -H/--host and -M/--machine (they reach other
// machines) and everything that is not about showing status.
var systemctlOptions = options("laq n:o:",
	"no-pager full all user system plain quiet no-legend lines= output=")

func systemctlIsStatus(args []word) bool {
	p, ok := systemctlOptions.parse(args)
	if !ok || len(p.operands) == 0 {
		return false
	}
	sub, _ := asciiLower(p.operands[0].text)
	return sub == "status"
}
