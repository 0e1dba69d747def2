package ephemeral

import "strings"

// arity is whether an option takes a value.
type arity int

const (
	flag     arity = iota
	value          // attached (-n5, --lines=5) or the next word
	optional       // attached only (-Iseconds, --color=always)
)

// optSpec is the whole set of options a rule allows; parsing fails on any
// other, so options that are not listed are refused.
type optSpec struct {
	short map[byte]arity
	long  map[string]arity
	// firstOperandEnds: the program stops reading options at its first
	// operand (bash builtins, git config, xxd), so everything after it is
	// an operand, whatever it looks like.
	firstOperandEnds bool
}

// stopAtOperand is s for a program that reads options only before its
// first operand.
func (s optSpec) stopAtOperand() optSpec {
	s.firstOperandEnds = true
	return s
}

// options builds an optSpec in getopt's notation: short is like "nE e:
// I::" (x: takes a value, x:: an attached optional one; spaces are for
// reading), long is like "quiet expression= color=?".
func options(short, long string) optSpec {
	s := optSpec{short: map[byte]arity{}, long: map[string]arity{}}
	short = strings.ReplaceAll(short, " ", "")
	for i := 0; i < len(short); i++ {
		c, a := short[i], flag
		if strings.HasPrefix(short[i+1:], "::") {
			a, i = optional, i+2
		} else if strings.HasPrefix(short[i+1:], ":") {
			a, i = value, i+1
		}
		s.short[c] = a
	}
	for _, name := range strings.Fields(long) {
		switch {
		case strings.HasSuffix(name, "=?"):
			s.long[strings.TrimSuffix(name, "=?")] = optional
		case strings.HasSuffix(name, "="):
			s.long[strings.TrimSuffix(name, "=")] = value
		default:
			s.long[name] = flag
		}
	}
	return s
}

type option struct {
	name  string // "-e" or "--expression"
	value word   // empty text when none was given
}

type parsedArgs struct {
	options  []option
	operands []word
}

// parse reads args the way GNU getopt_long does, options and operands
// mixed until "--" (or only up to the first operand, see
// firstOperandEnds). It fails on an unknown option, on a missing value, and
// on a value taken from the next word that starts with '-': if the rule
// and the program disagreed on whether an option takes a value, that word
// would be an option the rule never checked.
func (s optSpec) parse(args []word) (parsedArgs, bool) {
	var p parsedArgs
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch t := arg.text; {
		case t == "--":
			p.operands = append(p.operands, args[i+1:]...)
			return p, true
		case strings.HasPrefix(t, "--"):
			name, val, hasVal := strings.Cut(t[2:], "=")
			a, ok := s.long[name]
			if !ok || (a == flag && hasVal) {
				return p, false
			}
			o := option{name: "--" + name, value: arg.with(val)}
			if a == value && !hasVal {
				if o.value, ok = nextValue(args, &i); !ok {
					return p, false
				}
			}
			p.options = append(p.options, o)
		case len(t) > 1 && t[0] == '-':
			if !s.parseCluster(args, &i, &p) {
				return p, false
			}
		case s.firstOperandEnds:
			p.operands = append(p.operands, args[i:]...)
			return p, true
		default:
			p.operands = append(p.operands, arg)
		}
	}
	return p, true
}

// parseCluster reads -abc: flags, then at most one option whose value is
// the rest of the word or the next word.
func (s optSpec) parseCluster(args []word, i *int, p *parsedArgs) bool {
	arg := args[*i]
	for j := 1; j < len(arg.text); j++ {
		c := arg.text[j]
		a, ok := s.short[c]
		if !ok {
			return false
		}
		o := option{name: "-" + string(c)}
		if a == flag {
			p.options = append(p.options, o)
			continue
		}
		o.value = arg.with(arg.text[j+1:])
		if a == value && o.value.text == "" {
			if o.value, ok = nextValue(args, i); !ok {
				return false
			}
		}
		p.options = append(p.options, o)
		return true
	}
	return true
}

func nextValue(args []word, i *int) (word, bool) {
	if *i+1 >= len(args) || strings.HasPrefix(args[*i+1].text, "-") {
		return word{}, false
	}
	*i++
	return args[*i], true
}

// with is a part of w (an attached option value) that keeps what the shell
// may do to w.
func (w word) with(text string) word {
	w.text = text
	return w
}
