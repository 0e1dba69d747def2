package ephemeral

import "testing"

// bypasses are the holes issue 8 found in Is ("What was found", items 3 to
// 6, and item 7 where Is can see it), each as a command Is must refuse,
// with the variants found while closing them. Each names its class.
var bypasses = []glanceCase{
	// 3: bash's command stops reading options at the first operand.
	{"command rm -v victim", false, "command: -v after the operand is rm's"},
	{"command env -v -- sh -c 'rm x'", false, "command: runs env, then sh"},
	{"command awk -v x=1 'BEGIN{system(\"id\")}'", false, "command: runs awk's system"},
	{"command -p rm x", false, "command -p without -v runs rm"},
	{"command -- -v rm", false, "command: after -- the -v is the program's name"},
	{"command", false, "command alone"},

	// 4: git's legacy config stops at the first operand, so these set NAME.
	{"git config core.fsmonitor 'touch x' --get", false, "config: NAME VALUE --get sets"},
	{"git config user.name x --list", false, "config: NAME VALUE --list sets"},
	{"git config user.name x -l", false, "config: NAME VALUE -l sets"},
	{"git config a.b c --get-all", false, "config: NAME VALUE --get-all sets"},
	{"git config a.b c --get-regexp", false, "config: NAME VALUE --get-regexp sets"},
	{"git config a.b c --get-urlmatch", false, "config: NAME VALUE --get-urlmatch sets"},
	{"git config --global a.b c --get", false, "config: writes the global file"},
	{"git config --file=evil a.b c --get", false, "config: writes any file"},
	{"git config diff.external 'touch x' --get && git diff", false, "config then a glance that runs it"},
	{"git config --get a.b c d", false, "config: more operands than --get takes"},
	{"git config --list a.b", false, "config: --list takes no operand"},
	{"git config --get --list", false, "config: two actions"},

	// 5: ANSI-C and locale quoting hide a word's text.
	{"git reflog e$'x'pire --expire=now --all", false, "$'…' spells expire"},
	{"git reflog e$\"x\"pire --all", false, "$\"…\" spells expire"},
	{"git reflog e\"$X\"pire --all", false, "an expansion may spell expire"},
	{"git reflog ex*e --all", false, "a glob may spell expire"},
	{"echo $'a;b'", false, "$'…' refused anywhere, even on echo"},
	{"awk '{print}' $'/in\\x65t/tcp/0/example.com/80'", false, "$'…' spells /inet"},
	{"awk -v f=$'/in\\x65t/tcp/0/x/80' 'BEGIN{ARGV[1]=f; ARGC=2}{print}'", false, "/inet through a -v value"},
	{"awk -v f=/inet/tcp/0/x/80 'BEGIN{ARGV[1]=f; ARGC=2}{print}'", false, "/inet plainly in a -v value"},
	{"awk 'BEGIN{ARGV[1]=\"/in\" \"et/tcp/0/x/80\"; ARGC=2}{print}'", false, "/inet by string concatenation"},
	{"awk 'BEGIN{ARGV[1]=\"/\\151net/tcp/0/x/80\"; ARGC=2}{print}'", false, "/inet by an octal escape"},
	{"awk '{print}' x=1 /INET/tcp/0/x/80", false, "inet in any case"},
	{"awk - '|'", false, "a lone - where the program goes (found by FuzzIs)"},

	// 6: glances that never end.
	{"cat /dev/zero", false, "device: never ends"},
	{"head -n 1 /dev/zero", false, "device: no newline ever comes"},
	{"sed ':a;ba' f", false, "sed: a branch loop"},
	{"awk 'BEGIN{while(1);}'", false, "awk: a while loop"},
	{"jq -n 'repeat(1)'", false, "jq: an endless generator"},
	{"top -b -n 2 -d 100000", false, "top: waits 100000 s between frames"},
	{"cat /dev/urandom", false, "device: endless"},
	{"cat /dev/stdin", false, "device: the shell's input"},
	{"cat /dev/tty", false, "device: a terminal"},
	{"cat /dev/fd/0", false, "device: descriptor alias"},
	{"cat /proc/self/fd/0", false, "proc: descriptor alias"},
	{"cat /proc/kmsg", false, "proc: blocks"},
	{"cat /proc/self/pagemap", false, "proc: not in the readable list"},
	{"cat /sys/kernel/debug/tracing/trace_pipe", false, "sys: blocks"},
	{"grep -r x /proc", false, "proc: a recursive read reaches kcore"},
	{"grep -r x /", false, "a recursive read of / reaches /proc"},
	{"grep -r x /sys", false, "sys: refused whole"},
	{"wc -c /dev/zero", false, "device on wc"},
	{"md5sum /dev/zero", false, "device on a checksum"},
	{"grep x /dev/zero", false, "device on grep"},
	{"cat //dev/zero", false, "device: doubled slash"},
	{"cat /dev/./zero", false, "device: dot component"},
	{"cat /tmp/../dev/zero", false, "device: through .."},
	{"cat ../../../../../../../../dev/zero", false, "device: climbing from the working directory"},
	{"cat ~/../../../../../../dev/zero", false, "device: climbing from home"},
	{"cat ~root/../dev/zero", false, "device: climbing from another home"},
	{"cat /d*/zero", false, "device: a glob may name it"},
	{"cat /de?/zero", false, "device: a glob may name it"},
	{"cat \"$PWD\"/../../../../dev/zero", false, "device: an expansion may name it"},
	{"grep -f /dev/zero x", false, "device as an option value"},
	{"grep --file=/dev/zero x", false, "device as a long option value"},
	{"grep -f/dev/zero x", false, "device as an attached option value"},
	{"sed 'r /dev/zero' f", false, "device read by sed r"},
	{"sed 'R /dev/zero' f", false, "device read by sed R"},
	{"sed 's/^/\\n/;D' f", false, "sed: D restarts the cycle forever"},
	{"sed ':a;s/x/xx/;ta' f", false, "sed: a t loop"},
	{"sed ':a;T;ba' f", false, "sed: a T loop"},
	{"sed -n ':a;/x/N;ba' f", false, "sed: the N that ends the loop is conditional"},
	{"sed ':a;bx;N;:x;ba' f", false, "sed: a forward branch skips the N"},
	{"awk 'BEGIN{for(;;);}'", false, "awk: a for loop"},
	{"awk 'BEGIN{do x++; while(1)}'", false, "awk: a do loop"},
	{"awk 'function f(){f()} BEGIN{f()}'", false, "awk: recursion"},
	{"jq -n 'def f: f; f'", false, "jq: recursion"},
	{"jq -n '[range(1e18)]'", false, "jq: a huge range"},
	{"jq -n 'recurse(.+1)'", false, "jq: endless recursion"},
	{"jq 'until(false; .)' f", false, "jq: endless until"},
	{"jq -n 'while(true; .)'", false, "jq: endless while"},
	{"jq -f prog.jq f", false, "jq: a program Is cannot see"},
	{"jq --rawfile x /dev/zero -n '$x'", false, "jq: device as an option value"},
	{"seq 1 1000000000000", false, "seq: never ends in practice"},
	{"docker stats -- --no-stream", false, "docker: after -- it is a container name"},

	// 7: glances with side effects.
	{"top -b -n 1", false, "top creates ~/.config/procps"},
	{"top -l 1", false, "top refused in every form"},
	{"sort -S 1 f", false, "sort spills temporary files"},
	{"sort --buffer-size=1 f", false, "sort spills temporary files"},
	{"sort -T /tmp f", false, "sort spills temporary files"},
}

// secondRedTeam are the classes issue 22 found, each as commands Is must
// refuse (the sandbox holds them too, where it runs).
var secondRedTeam = []glanceCase{
	// test and [ evaluate -v's subscript arithmetically; $_ brings in a
	// word the raw-text check never saw as a substitution.
	{`test -v 'a[$(touch x)]'`, false, "test -v: the subscript runs a substitution"},
	{`[ -v 'a[1]' ]`, false, "[ -v evaluates its operand"},
	{`test -R ref`, false, "test -R: a nameref's target is evaluated"},
	{`echo '\$(touch x)'; test -v "a[$_]"`, false, "$_ carries the escaped substitution"},
	{`[ "$X" ]`, false, "an expansion may become -v"},
	{`test $_ = x`, false, "$_ may become anything"},
	// gawk: SYMTAB aliases ARGV; concatenation hides the refused words.
	{`awk 'BEGIN{SYMTAB["AR" "GV"][1]="/etc/shadow"; SYMTAB["AR" "GC"]=2}{print}'`, false, "gawk SYMTAB reaches ARGV"},
	{`awk 'BEGIN{print PROCINFO["pid"]}'`, false, "gawk PROCINFO"},
	{`awk 'BEGIN{for (f in FUNCTAB) print f}'`, false, "gawk FUNCTAB"},
	{`awk '{print}' ARGC=3 f`, false, "an assignment operand to ARGC"},
	{`awk -v ENVIRON=x '{print}' f`, false, "a -v assignment to ENVIRON"},
	// git: an alias reached by a subcommand spelled unlike the builtin.
	{"git Status", false, "git runs alias.Status: subcommands are case-exact"},
	{"git LOG -1", false, "git runs alias.LOG"},
	{"git sTatus && ls", false, "a case-changed subcommand in a compound"},
	// Queries that write.
	{"git describe --dirty", false, "describe --dirty refreshes .git/index"},
	{"git describe --broken", false, "describe --broken refreshes .git/index"},
	{"git log --show-signature -1", false, "gpg creates ~/.gnupg"},
	{"git show --show-sig HEAD", false, "an abbreviation of --show-signature"},
	{"sort -m a b c d e f g h i j k l m n o p q", false, "sort -m over 16 files spills temporary files"},
	{"sort --merge a b", false, "sort --merge"},
	{"tac /proc/self/status", false, "tac copies an unseekable file to a temporary file"},
	{`tac "$F"`, false, "tac of a file an expansion names"},
	// Glances that never end.
	{`jq -n '"abc" | gsub(""; "x")'`, false, "jq 1.6 loops on an empty-matching regex"},
	{`jq '[splits("a*")]' f`, false, "jq splits on an empty match"},
	{"tree --fromfile /dev/stdin", false, "tree reads a listing from a device"},
	{"tree --infofile=/dev/zero", false, "tree reads an info file from a device"},
	{"tree -l /proc", false, "tree follows links, cycles under /proc"},
	{"tree /dev/zero", false, "tree given a device"},
	// The key in the model's context.
	{"printenv", false, "printenv shows the environment"},
	{"printenv ANTHROPIC_API_KEY", false, "printenv shows the key"},
	{"env", false, "env shows the environment"},
	{"ps e", false, "ps e shows environments"},
	{"ps auxe", false, "ps e in a BSD cluster"},
	{"ps axewww", false, "ps e in a longer cluster"},
	{"ps -o pid,environ", false, "an environ output column"},
	{`jq -n env`, false, "jq env prints the environment"},
	{`jq -n '$ENV.ANTHROPIC_API_KEY'`, false, "jq $ENV"},
}

// secondRedTeamAccepted are the glances the new rules must keep.
var secondRedTeamAccepted = []glanceCase{
	{"git status", true, "the glance"},
	{"git diff --stat", true, "kept: the sandbox holds its index write (see RefreshesIndex)"},
	{"git describe --tags", true, "describe without --dirty"},
	{"git log --stat -3", true, "log without signatures"},
	{"test -f go.mod", true, "test of a plain path"},
	{"[ -d .git ]", true, "[ of a plain path"},
	{"ps aux", true, "ps without e"},
	{"ps -ef", true, "ps -e is every process, not environments"},
	{"awk '{print $1}' f", true, "awk fields"},
	{"jq '.name' package.json", true, "jq path"},
	{"sort -n f", true, "sort without -m"},
	{"tac f", true, "tac of a plain file"},
	{"tree -L 2", true, "tree with a depth"},
}

func TestIsRefusesTheSecondRedTeamsClasses(t *testing.T) {
	for _, c := range append(secondRedTeam, secondRedTeamAccepted...) {
		if got := Is(c.cmd); got != c.want {
			t.Errorf("Is(%q) = %v, want %v: %s", c.cmd, got, c.want, c.why)
		}
	}
}

func TestRefreshesIndex(t *testing.T) {
	for cmd, want := range map[string]bool{
		"git diff": true, "git diff --stat": true, "git status && git diff --stat": true, "git diff HEAD": true,
		"git -C sub diff": true, "git diff HEAD~1 -- main.go": true,
		"git diff --cached": false, "git diff --staged --stat": false, "git diff HEAD~1 HEAD": false,
		"git diff main..topic": false, "git status": false, "ls": false, "git log -p": false,
	} {
		if got := RefreshesIndex(cmd); got != want {
			t.Errorf("RefreshesIndex(%q) = %v, want %v", cmd, got, want)
		}
	}
}

func TestIsRefusesTheBypasses(t *testing.T) {
	for _, c := range bypasses {
		if got := Is(c.cmd); got != c.want {
			t.Errorf("Is(%q) = %v, want %v: %s", c.cmd, got, c.want, c.why)
		}
	}
}
