package ephemeral

// jqOptions are jq's options that only shape input and output; --arg and
// --argjson (two values each) are taken apart before parsing. Left out:
// -f/--from-file and -L (code Is cannot see), --rawfile and --slurpfile
// (they read files by name).
var jqOptions = options("rjcnsaSCMeR",
	"raw-output join-output compact-output null-input slurp ascii-output sort-keys "+
		"color-output monochrome-output exit-status raw-input tab indent= seq stream "+
		"args jsonargs help version")

// jqRefusedNames are the jq builtins and keywords through which a program
// runs without end on finite input: def (recursion), repeat, recurse,
// while, until, range (range(1e18)), and import/include, which bring in
// definitions Is cannot see. What remains walks its input (.[], ..,
// paths) and so ends with it.
//
// Also refused: the regular-expression builtins, which loop forever on a
// pattern that matches the empty string in jq 1.6 (gsub(""; "x")); env
// and $ENV, which print the environment, the key with it; input and
// inputs and debug/stderr/input_filename, which reach beyond the filter's
// own input and output.
var jqRefusedNames = map[string]bool{
	"def": true, "repeat": true, "recurse": true, "recurse_down": true,
	"while": true, "until": true, "range": true, "import": true, "include": true,
	"test": true, "match": true, "capture": true, "scan": true, "splits": true,
	"sub": true, "gsub": true,
	"env": true, "ENV": true, "input": true, "inputs": true, "debug": true, "stderr": true,
	"input_filename": true,
}

// jqIsBounded accepts jq [OPTIONS] FILTER [FILES…] whose options are listed and
// whose filter (the first operand) names none of jqRefusedNames, looked
// for in its whole text, strings included.
func jqIsBounded(args []word) bool {
	rest := make([]word, 0, len(args))
	for i := 0; i < len(args); i++ {
		switch args[i].text {
		case "--":
			// jq 1.6 refuses it, 1.7 ends options there: refused, so
			// the two agree on which word is the filter.
			return false
		case "--arg", "--argjson":
			if i+2 >= len(args) {
				return false
			}
			i += 2
			continue
		}
		rest = append(rest, args[i])
	}
	p, ok := jqOptions.parse(rest)
	if !ok || len(p.operands) == 0 {
		return false
	}
	prog := p.operands[0]
	if prog.uncertain() || prog.text == "-" {
		return false // jq 1.6 compiles - and fails; refused, as for awk
	}
	return !anyName(prog.text, jqRefusedNames)
}
