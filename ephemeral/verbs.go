package ephemeral

import "strings"

// verbRule is how one allowed verb is checked.
type verbRule struct {
	// openArgs: no option or operand of the verb writes, runs a command or
	// waits forever, so arguments the shell expands ($HOME, *.go) are fine.
	openArgs bool
	// names: the verb only looks its arguments up or prints them (ls,
	// stat, echo); it never reads a file's content, so the device rule
	// (paths.go) does not apply to it.
	names bool
	// check sees the arguments after the verb.
	check func(args []word) bool
	// files names the files the verb reads beyond its arguments (sed's r
	// and R commands); the device rule applies to them too.
	files func(args []word) []string
}

// printsOnly is the rule of a verb whose every use only reads and prints;
// namesOnly of one that does not even read file contents.
var (
	printsOnly = verbRule{openArgs: true, check: anyArgs}
	namesOnly  = verbRule{openArgs: true, names: true, check: anyArgs}
)

// verbs are the allowed first words, lowercase: the seed's list and
// issue 8's glances. A verb whose options all only print keeps
// printsOnly; the others list the options they allow (see options.go), so
// an option a rule does not know is refused. htop is left out: it has no
// batch mode; top too: even top -b -n 1 creates ~/.config/procps, and ps
// shows the same.
var verbs = map[string]verbRule{
	"git": {check: gitIsQuery},

	// Directory and system information.
	"ls": namesOnly, "ll": namesOnly, "dir": namesOnly, "pwd": namesOnly,
	"df": namesOnly, "uptime": namesOnly, "whoami": namesOnly, "id": namesOnly,

	"du":       printsOnly,                                             // --files0-from and -X read a file
	"free":     {names: true, check: refuse("sc", "seconds", "count")}, // -s repeats until killed
	"date":     {names: true, check: dateIsQuery},
	"hostname": {names: true, check: hostnameIsQuery},
	"realpath": {names: true, check: allows(realpathOptions)},
	"basename": {names: true, check: allows(basenameOptions)},
	"dirname":  {names: true, check: allows(dirnameOptions)},

	// Processes and containers.
	"ps": {openArgs: true, names: true, check: psHidesEnvironments}, "pgrep": namesOnly,
	"jobs":      {names: true, check: refuse("x")}, // jobs -x cmd runs cmd
	"lsof":      {names: true, check: refuse("r")}, // -r and +r repeat until killed
	"netstat":   {names: true, check: netstatIsSnapshot},
	"ss":        {check: refuse("KDE", "kill", "diag", "events")}, // kill sockets, dump to a file, watch; -F reads a file
	"systemctl": {names: true, check: systemctlIsStatus},
	"docker":    {names: true, check: dockerIsQuery},
	"kubectl":   {names: true, check: kubectlIsQuery},

	// Viewing files.
	"cat": printsOnly, "head": printsOnly, "wc": printsOnly,
	"stat": namesOnly, "echo": namesOnly,
	"tail": {check: tailIsBounded},
	"file": {names: true, check: allows(fileOptions)},
	"find": {names: true, check: findIsReadOnly},
	// tree: -o writes, -R writes 00Tree.html everywhere, --fromfile and
	// --infofile read files by name, -l follows links (cycles under
	// /proc); its operands and option values fall under the device rule.
	"tree":    {check: refuse("oRl", "output", "fromfile", "infofile", "follow")},
	"tac":     {check: tacIsReadOnly},
	"cmp":     {check: cmpIsReadOnly},
	"od":      {check: allows(odOptions)},
	"xxd":     {check: xxdIsDump},
	"hexdump": {check: allows(hexdumpOptions)},
	"tar":     {check: tarIsListing},
	"unzip":   {check: unzipIsListing},

	// Checksums: -c reads the files a listing names, which Is cannot see,
	// so it is left out.
	"md5sum": {check: allows(sumOptions)}, "sha1sum": {check: allows(sumOptions)},
	"sha224sum": {check: allows(sumOptions)}, "sha256sum": {check: allows(sumOptions)},
	"sha384sum": {check: allows(sumOptions)}, "sha512sum": {check: allows(sumOptions)},
	"b2sum": {check: allows(b2sumOptions)}, "cksum": {check: allows(cksumOptions)},

	// Text processing.
	"grep": printsOnly, "egrep": printsOnly, "fgrep": printsOnly,
	"cut": printsOnly, "tr": printsOnly, "column": printsOnly, "nl": printsOnly,
	"rev": printsOnly, "comm": printsOnly, "diff": printsOnly,
	"jq": {check: jqIsBounded},
	// rg --pre and --hostname-bin run a program.
	"rg":   {check: refuse("", "pre", "pre-glob", "hostname-bin")},
	"sort": {check: allows(sortOptions)},
	"uniq": {check: uniqIsReadOnly},
	"awk":  {check: awkIsReadOnly},
	"sed":  {check: sedIsReadOnly, files: sedFiles},

	// Printing and testing values.
	"printf": {openArgs: true, names: true, check: printfIsPlain},
	"test":   {names: true, check: testIsPlain},
	"[":      {names: true, check: bracketIsPlain},
	"seq":    {names: true, check: seqIsBounded},

	// Looking up commands and the platform.
	"which": namesOnly, "whereis": namesOnly, "type": namesOnly,
	"locale": namesOnly, "nproc": namesOnly, "getconf": namesOnly, "sw_vers": namesOnly,
	"command": {names: true, check: commandIsQuery},
	"uname":   {names: true, check: refuse("S")}, // -S sets the host name on some systems
	"arch":    {names: true, check: noArgs},      // arch -x86_64 cmd runs cmd on macOS
}

// allows makes a rule that accepts exactly the options of spec, with any
// operands.
func allows(spec optSpec) func([]word) bool {
	return func(args []word) bool {
		_, ok := spec.parse(args)
		return ok
	}
}

func anyArgs([]word) bool { return true }

// testIsPlain refuses -v and -R, whose operand bash evaluates: the
// subscript of a[$(cmd)] is arithmetic, and arithmetic runs command
// substitutions (also when $_ brings them in from the previous command).
// An expanded word is refused, since it may become -v at run time.
// printenv, env and ps's e forms are no glances at all: they put the
// environment, the key with it, into the model's context.
func testIsPlain(args []word) bool {
	for _, a := range args {
		if a.expands || a.text == "-v" || a.text == "-R" {
			return false
		}
	}
	return true
}

func bracketIsPlain(args []word) bool { return testIsPlain(args) && bracketIsClosed(args) }

// psHidesEnvironments refuses the ps forms that print other processes'
// environments: BSD e and the e/environ/ENV output keywords.
func psHidesEnvironments(args []word) bool {
	for _, a := range args {
		t := a.text
		if a.expands {
			return false
		}
		if !strings.HasPrefix(t, "-") && strings.ContainsAny(t, "e") && !strings.ContainsAny(t, "=,") {
			return false // BSD-style cluster with e: ps e, ps auxe, ps axe
		}
		lower := strings.ToLower(t)
		if strings.Contains(lower, "env") || strings.Contains(lower, "environ") {
			return false
		}
	}
	return true
}

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

// findRefused are the primaries that run commands, delete or write files,
// and -files0-from, which reads a listing (from a device, forever); -newer
// is refused because the seed did.
var findRefused = []string{"-exec", "-ok", "-delete", "-fprint", "-fls", "-newer", "-files0-from"}

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
// -ni), script files (-f) and scripts that write, run or loop (see
// sed.go).
func sedIsReadOnly(args []word) bool {
	scripts, ok := sedScripts(args)
	if !ok {
		return false
	}
	for _, s := range scripts {
		if _, ok := sedScriptFiles(s); !ok {
			return false
		}
	}
	return true
}

// sedScripts are the -e scripts, or else the first operand.
func sedScripts(args []word) ([]string, bool) {
	p, ok := sedOptions.parse(args)
	if !ok {
		return nil, false
	}
	var scripts []word
	for _, o := range p.options {
		if o.name == "-e" || o.name == "--expression" {
			scripts = append(scripts, o.value)
		}
	}
	if len(scripts) == 0 {
		if len(p.operands) == 0 {
			return nil, false
		}
		scripts = p.operands[:1]
	}
	texts := make([]string, len(scripts))
	for i, s := range scripts {
		if s.uncertain() {
			return nil, false
		}
		texts[i] = s.text
	}
	return texts, true
}

// sedFiles are the files the scripts' r and R commands read.
func sedFiles(args []word) []string {
	scripts, _ := sedScripts(args)
	var all []string
	for _, s := range scripts {
		files, _ := sedScriptFiles(s)
		all = append(all, files...)
	}
	return all
}

var awkOptions = options("F:v:", "field-separator= assign= sandbox posix traditional help version")

// awkIsReadOnly takes the program from the command line only (no -f, -e,
// -i, -l: they load code from files) and checks it (see awk.go). awk reads
// options only up to the program; what follows is files and assignments.
// gawk opens a file operand named /inet/… as a network connection: an
// operand or -v value holding "inet" in any case is refused, and since
// the program can name no file itself (no getline, no ARGV, no output
// redirection), however it spells one does not matter. A word the shell
// expands is refused, since its value is unseen.
func awkIsReadOnly(args []word) bool {
	p, ok := awkOptions.stopAtOperand().parse(args)
	if !ok || len(p.operands) == 0 {
		return false
	}
	for _, a := range args {
		if a.expands {
			return false
		}
	}
	for _, o := range p.options {
		if awkValueRefused(o.value.text) {
			return false
		}
	}
	for _, o := range p.operands[1:] {
		if awkValueRefused(o.text) {
			return false
		}
	}
	prog := p.operands[0]
	// A lone - is no program text: mawk reads it as something else than
	// gawk does (FuzzIs found awk - '|').
	return !prog.uncertain() && prog.text != "-" && awkProgramIsReadOnly(prog.text)
}

// awkValueRefused: a /inet file, or an assignment to one of the
// variables through which gawk opens files or shows the environment.
func awkValueRefused(v string) bool {
	v = strings.ToLower(v)
	if strings.Contains(v, "inet") {
		return true
	}
	name, _, isAssignment := strings.Cut(v, "=")
	if !isAssignment {
		return false
	}
	for _, r := range []string{"argv", "argc", "environ", "symtab", "procinfo", "functab"} {
		if strings.Contains(name, r) {
			return true
		}
	}
	return false
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

// commandOptions are read, like every bash builtin's, only up to the
// first operand: command rm -v x runs rm.
var commandOptions = options("pvV", "").stopAtOperand()

// commandIsQuery allows command -v and -V only, given before the names:
// plain command foo runs foo.
func commandIsQuery(args []word) bool {
	p, ok := commandOptions.parse(args)
	if !ok || len(p.operands) == 0 {
		return false
	}
	for _, o := range p.options {
		if o.name == "-v" || o.name == "-V" {
			return true
		}
	}
	return false
}

var (
	dockerPs     = options("aqsn: f:", "all quiet size no-trunc latest last= filter= format=")
	dockerImages = options("aq f:", "all quiet digests no-trunc filter= format=")
	dockerStats  = options("a", "all no-stream no-trunc format=")
	// dockerLogs leaves out -f/--follow, which waits for more forever.
	dockerLogs = options("tn:", "timestamps details since= until= tail=")
)

// dockerIsQuery allows docker ps, docker images, docker stats --no-stream
// (without it stats streams forever) and docker logs of one container
// without --follow. Global options such as -H (another daemon) are
// refused by requiring the subcommand first.
func dockerIsQuery(args []word) bool {
	if len(args) == 0 {
		return false
	}
	sub, _ := asciiLower(args[0].text)
	switch sub {
	case "ps":
		_, ok := dockerPs.parse(args[1:])
		return ok
	case "images":
		_, ok := dockerImages.parse(args[1:])
		return ok
	case "stats":
		p, ok := dockerStats.parse(args[1:])
		return ok && hasOption(p, "--no-stream")
	case "logs":
		p, ok := dockerLogs.parse(args[1:])
		return ok && len(p.operands) == 1
	}
	return false
}

func hasOption(p parsedArgs, name string) bool {
	for _, o := range p.options {
		if o.name == name {
			return true
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

// kubectlLogs leaves out -f/--follow, and --kubeconfig as above.
var kubectlLogs = options("pn:c:l:",
	"previous timestamps prefix all-containers ignore-errors help "+
		"namespace= container= selector= tail= since= since-time= limit-bytes= context= cluster= request-timeout= max-log-requests=")

// kubectlIsQuery allows kubectl get, and kubectl logs of one pod.
func kubectlIsQuery(args []word) bool {
	if len(args) == 0 {
		return false
	}
	switch sub, _ := asciiLower(args[0].text); sub {
	case "get":
		_, ok := kubectlOptions.parse(args[1:])
		return ok
	case "logs":
		p, ok := kubectlLogs.parse(args[1:])
		return ok && len(p.operands) >= 1 && len(p.operands) <= 2 // POD [CONTAINER]
	}
	return false
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
