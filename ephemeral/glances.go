package ephemeral

import (
	"strconv"
	"strings"
)

// The rules of issue 8's glances, and of the seed verbs whose deny-lists
// became allow-lists. Each lists the options it accepts; any other is
// refused, so an option a later version adds is refused until someone
// reads what it does.

var (
	realpathOptions = options("emLPqsz",
		"canonicalize-existing canonicalize-missing logical physical quiet strip no-symlinks zero "+
			"relative-to= relative-base= help version")
	basenameOptions = options("az s:", "multiple zero suffix= help version")
	dirnameOptions  = options("z", "zero help version")

	// fileOptions leave out -C (compiles a magic file), -m (reads one),
	// -f (reads a list of names), -s (reads block and character devices),
	// -z/-Z (may run decompressors) and -p (resets access times).
	fileOptions = options("bcikLhNr0lvE F:e:P:",
		"brief mime mime-type mime-encoding keep-going dereference no-dereference no-pad raw "+
			"print0 list extension apple separator= exclude= exclude-quiet= parameter= help version")

	// sortOptions leave out -o (writes), -S and -T (spill temporary
	// files, where -S is small), --compress-program (runs one),
	// --files0-from and --random-source (read files by name) and
	// --batch-size (merges through temporary files).
	// -m/--merge is left out too: merging more than 16 files goes
	// through temporary files.
	sortOptions = options("bdfgiMhnRrVcCsuz k:t:",
		"ignore-leading-blanks dictionary-order ignore-case general-numeric-sort ignore-nonprinting "+
			"month-sort human-numeric-sort numeric-sort random-sort reverse version-sort check=? "+
			"stable unique zero-terminated key= field-separator= sort= parallel= debug help version")

	// tailOptions leave out -f, -F and --follow (they wait for more
	// forever), and --pid, --retry and -s, which only mean something
	// with them.
	tailOptions = options("qvz c:n:", "bytes= lines= quiet silent verbose zero-terminated help version")

	tacOptions = options("br s:", "before regex separator= help version")
	cmpOptions = options("blsv i:n:",
		"print-bytes verbose quiet silent ignore-initial= bytes= help version")
	odOptions = options("abcdfilosxv A:j:N:S:t:w::",
		"address-radix= skip-bytes= read-bytes= strings=? format= output-duplicates width=? "+
			"endian= traditional help version")
	hexdumpOptions = options("bcCdoxv e:n:s:", "")

	// sumOptions are md5sum's, sha1sum's and the sha2 family's, without
	// -c/--check (see verbs).
	sumOptions   = options("btz", "binary text tag zero help version")
	b2sumOptions = options("btz l:", "binary text tag zero length= help version")
	cksumOptions = options("z a:l:",
		"algorithm= length= base64 raw tag untagged zero debug help version")
)

// obsoleteCount is tail's old -5, +5, -5c, +10l.
func obsoleteCount(s string) bool {
	if len(s) < 2 || (s[0] != '-' && s[0] != '+') {
		return false
	}
	digits := strings.TrimRight(s[1:], "bcl")
	return isDigits(digits) && len(s[1:])-len(digits) <= 1
}

// tailIsBounded allows tail with a count, never following. The old
// syntax (tail -5, tail +5) is read only as the first word, and then only
// a count: tail +5f follows.
func tailIsBounded(args []word) bool {
	if len(args) > 0 && obsoleteCount(args[0].text) {
		args = args[1:]
	}
	p, ok := tailOptions.parse(args)
	if !ok {
		return false
	}
	for _, o := range p.operands {
		if strings.HasPrefix(o.text, "+") {
			return false
		}
	}
	for _, o := range p.options {
		if o.name == "-n" || o.name == "-c" || o.name == "--lines" || o.name == "--bytes" {
			if !isCount(o.value.text) {
				return false
			}
		}
	}
	return true
}

// isCount is a count as head and tail take it: +N or N, with an optional
// size suffix (5K, 2MB).
func isCount(s string) bool {
	s = strings.TrimPrefix(s, "+")
	digits := strings.TrimRight(s, "bkKMGB")
	return isDigits(digits) && len(s)-len(digits) <= 2
}

// tacIsReadOnly allows tac only on named files: reading a pipe, GNU tac
// first copies it to a temporary file.
func tacIsReadOnly(args []word) bool {
	p, ok := tacOptions.parse(args)
	if !ok || len(p.operands) == 0 {
		return false
	}
	for _, o := range p.operands {
		// tac copies a file it cannot seek (a pipe, a /proc or /sys
		// file) to a temporary file first.
		if o.text == "-" || o.uncertain() || strings.HasPrefix(o.text, "/proc") || strings.HasPrefix(o.text, "/sys") || strings.HasPrefix(o.text, "/dev") || strings.Contains(o.text, "..") {
			return false
		}
	}
	return true
}

// cmpIsReadOnly allows cmp FILE1 [FILE2 [SKIP1 [SKIP2]]].
func cmpIsReadOnly(args []word) bool {
	p, ok := cmpOptions.parse(args)
	return ok && len(p.operands) <= 4
}

// xxdFlags and xxdValued are the xxd options allowed, spelled in full as
// xxd knows them. Left out: -r (reverse: writes binary), and any other
// word starting with -: xxd tells options apart by their first letters,
// so "-rest" would be -r.
var (
	xxdFlags = map[string]bool{
		"-a": true, "-autoskip": true, "-b": true, "-bits": true, "-C": true, "-capitalize": true,
		"-e": true, "-E": true, "-EBCDIC": true, "-i": true, "-include": true,
		"-p": true, "-ps": true, "-postscript": true, "-plain": true, "-u": true, "-uppercase": true,
		"-h": true, "-help": true, "-v": true, "-version": true,
	}
	xxdValued = map[string]bool{
		"-c": true, "-cols": true, "-g": true, "-groupsize": true, "-l": true, "-len": true,
		"-o": true, "-offset": true, "-s": true, "-seek": true, "-n": true, "-name": true,
	}
)

// xxdIsDump allows xxd [options] [INFILE]. xxd reads options only up to
// the first operand, and xxd INFILE OUTFILE writes OUTFILE, so one
// operand at most, written plainly: xxd f -r is xxd writing a file named
// -r.
func xxdIsDump(args []word) bool {
	i := 0
	for ; i < len(args); i++ {
		t := args[i].text
		if t == "--" {
			i++
			break
		}
		if !strings.HasPrefix(t, "-") || t == "-" {
			break
		}
		switch {
		case xxdFlags[t]:
		case xxdValued[t]:
			if i+1 >= len(args) || !xxdNumber(args[i+1].text) && t != "-n" && t != "-name" {
				return false
			}
			if args[i+1].uncertain() {
				return false
			}
			i++
		case len(t) > 2 && xxdValued[t[:2]] && xxdNumber(t[2:]):
			// -c16, -s0x10, -l+8
		default:
			return false
		}
	}
	// A glob may name two files, and the second would be written.
	return len(args)-i == 0 || len(args)-i == 1 && !args[i].uncertain()
}

// xxdNumber is a number as xxd's -c, -g, -l, -o and -s take it: decimal,
// 0x hex or 0 octal, with a sign for -s.
func xxdNumber(s string) bool {
	s = strings.TrimLeft(s, "+-")
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		_, err := strconv.ParseUint(h, 16, 64)
		return err == nil && h != ""
	}
	return isDigits(s)
}

// tarList are the options of a tar listing: the mode t/--list, the
// archive, decompression by the built-in filters, and output shaping.
// Left out: every other mode (-x, -c, -r, -u, -A, --delete), and
// everything that runs or writes (-I/--use-compress-program,
// --to-command, --checkpoint-action, --index-file, -g, --rsh-command).
var tarList = options("tvzjJ f:",
	"list verbose gzip gunzip bzip2 xz zstd lzma file= force-local numeric-owner full-time utc "+
		"wildcards no-wildcards anchored no-anchored ignore-case")

// tarIsListing allows tar -t or --list with -f ARCHIVE, in dash style or
// in the old bundled style (tar tvf a.tar, tar tzf a.tgz, whose f takes
// the next word). An archive name with a colon would be a remote archive
// reached through rsh, so it is refused.
func tarIsListing(args []word) bool {
	if len(args) == 0 {
		return false
	}
	rest := args
	if first := args[0].text; first != "" && first[0] != '-' {
		// The old style: each letter is an option, values follow in order.
		bundle := make([]word, 0, len(args))
		next := 1
		for i := 0; i < len(first); i++ {
			c := first[i]
			if tarList.short[c] == value {
				if next >= len(args) {
					return false
				}
				bundle = append(bundle, args[0].with("-"+string(c)), args[next])
				next++
				continue
			}
			bundle = append(bundle, args[0].with("-"+string(c)))
		}
		rest = append(bundle, args[next:]...)
	}
	p, ok := tarList.parse(rest)
	if !ok || !(hasOption(p, "-t") || hasOption(p, "--list")) {
		return false
	}
	archives := 0
	for _, o := range p.options {
		if o.name == "-f" || o.name == "--file" {
			if strings.Contains(o.value.text, ":") || o.value.uncertain() {
				return false
			}
			archives++
		}
	}
	return archives == 1
}

// zipinfoFlags are zipinfo's (unzip -Z's) listing formats.
var zipinfoFlags = map[string]bool{
	"-1": true, "-2": true, "-s": true, "-m": true, "-l": true, "-v": true,
	"-h": true, "-t": true, "-T": true, "-z": true,
}

// unzipIsListing allows unzip -l, -v and -Z [zipinfo flags] with an
// archive and member names, nothing that extracts: the mode must come
// first, and no later word may be an option (unzip reads -d DIR, -o and
// -x after the archive too).
func unzipIsListing(args []word) bool {
	if len(args) == 0 {
		return false
	}
	switch args[0].text {
	case "-l", "-v":
		args = args[1:]
	case "-Z":
		args = args[1:]
		for len(args) > 0 && zipinfoFlags[args[0].text] {
			args = args[1:]
		}
	default:
		return false
	}
	for _, a := range args {
		if strings.HasPrefix(a.text, "-") {
			return false
		}
	}
	return len(args) > 0
}

// printfIsPlain allows printf FORMAT [ARGS…], refusing -v VAR (bash's
// printf assigns to a variable) and any first word that is an option or
// may become one; bash reads printf's options only before the format.
func printfIsPlain(args []word) bool {
	dashes := len(args) > 0 && args[0].text == "--"
	if dashes {
		args = args[1:]
	}
	if len(args) == 0 {
		return false
	}
	f := args[0]
	return !f.opaque() && !f.uncertain() && (dashes || !strings.HasPrefix(f.text, "-"))
}

// bracketIsClosed requires [ … ] to end with ], as the builtin does.
func bracketIsClosed(args []word) bool {
	return len(args) > 0 && args[len(args)-1].text == "]" && !args[len(args)-1].uncertain()
}

// seqMost is the most numbers a seq may print: ten million lines took
// 0.2 s here, while seq 1 1000000000000 would run for hours.
const seqMost = 10_000_000

var seqOptions = options("w s:f:", "equal-width separator= format= help version")

// seqIsBounded allows seq [-w] [-s SEP] [-f FORMAT] [FIRST [INCR]] LAST
// with plain decimal numbers (no exponent, no hex, no inf) that give at
// most seqMost lines. Negative numbers look like options, so the operands
// are taken from the end.
func seqIsBounded(args []word) bool {
	var nums []float64
	for len(args) > 0 && len(nums) < 3 {
		last := args[len(args)-1]
		n, ok := seqNumber(last)
		if !ok {
			break
		}
		nums = append([]float64{n}, nums...)
		args = args[:len(args)-1]
	}
	p, ok := seqOptions.parse(args)
	if !ok || len(p.operands) > 0 || len(nums) == 0 {
		return false
	}
	first, step, last := 1.0, 1.0, nums[len(nums)-1]
	switch len(nums) {
	case 2:
		first = nums[0]
	case 3:
		first, step = nums[0], nums[1]
	}
	if step == 0 {
		return false
	}
	count := (last-first)/step + 1
	return count <= seqMost
}

// seqNumber reads an optional sign, digits and an optional fraction.
func seqNumber(w word) (float64, bool) {
	if w.uncertain() {
		return 0, false
	}
	s := strings.TrimLeft(w.text, "+-")
	if len(w.text)-len(s) > 1 {
		return 0, false
	}
	whole, frac, _ := strings.Cut(s, ".")
	if !isDigits(whole) || (frac != "" && !isDigits(frac)) || len(s) > 30 {
		return 0, false
	}
	n, err := strconv.ParseFloat(w.text, 64)
	return n, err == nil
}
