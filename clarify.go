package flower

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/flowerrun/flower/doc"
	"github.com/flowerrun/flower/event"
	"github.com/flowerrun/flower/human"
)

// ClarifyOptions adjust ClarifyStep. The zero value is the seed's defaults.
type ClarifyOptions struct {
	// Name is the step's name; default StarterNamesFor(Lang).Clarify
	// (clarify; 确认需求 in Chinese).
	Name string
	// Spec replaces the default Clarify(Name, ch) role.
	Spec *AgentSpec
	// Instructions follow the clarifier's rules in the default role.
	Instructions string
	// AlwaysAsk runs the step even when a complete brief is on disk.
	AlwaysAsk bool
	// OnFail and Retries are the step's (default stop, no retry).
	OnFail  OnFail
	Retries int
	// Lang is the language of the brief, the rules and the name. The zero
	// Lang takes the language of the Runtime that runs the workflow (and
	// gives the channel ch that language unless it chose one).
	Lang Lang
}

// ClarifyStep builds the step that clarifies a request with the human and
// freezes the four-part brief at briefPath (which belongs in the
// workflow's workbench, so that the agents' index shows it):
//
//   - When: with a complete brief on disk (and not AlwaysAsk) the step is
//     skipped, the brief loaded into the ctx all the same. A brief that
//     cannot be loaded (missing or unreadable) counts as absent.
//   - Gate: the reply parsed as a brief; an incomplete one records the
//     missing sections under MissingKey and fails; a complete one is
//     written to briefPath and loaded into the ctx, and the words ch
//     appended to briefPath meanwhile (mail sent during clarify) are
//     appended again after it and follow the brief in the ctx.
//   - Reduce: the brief's prompt block, never the raw reply (a model adds
//     to it).
//   - ResumePrompt: the clarify-resume prompt, so that a clarification
//     continued from the lineage fills only what is missing.
//
// The ctx gets the brief in three places: BriefKey (*doc.Brief), the
// step's name (its prompt block), and MissingKey removed. No ResumeFrom:
// the Q&A never enters a later step's session, only the brief does.
func ClarifyStep(ch *human.Channel, briefPath string, prompt PromptFunc, o ClarifyOptions) Step {
	name := o.Name
	if name == "" {
		name = StarterNamesFor(o.Lang).Clarify
	}
	var spec AgentSpec
	if o.Spec != nil {
		spec = *o.Spec
	} else {
		spec = Clarify(name, channelOrNil(ch), WithLang(o.Lang), WithInstructions(o.Instructions))
	}
	lang := o.Lang
	hydrate := func(c *Ctx, b *doc.Brief) {
		c.Set(BriefKey, b)
		c.Set(name, b.PromptBlock(lang))
		c.Delete(MissingKey)
	}
	resume := PromptsFor(lang).ClarifyResume
	return Step{
		Name:         name,
		Spec:         spec,
		Prompt:       prompt,
		OnFail:       o.OnFail,
		Retries:      o.Retries,
		ResumePrompt: Text(resume),
		When: func(_ context.Context, c *Ctx) (bool, error) {
			if o.AlwaysAsk {
				return true, nil
			}
			if b := loadDoc(c, lang, langPick(lang, "确认书", "brief"), briefPath, doc.LoadBrief); b != nil && b.Complete() {
				hydrate(c, b)
				return false, nil
			}
			return true, nil
		},
		Gate: func(_ context.Context, r StepResult, c *Ctx) (bool, error) {
			b := doc.ParseBrief(r.Text)
			if !b.Complete() {
				c.Set(MissingKey, b.Missing(lang))
				return false, nil
			}
			if err := b.Write(lang, briefPath); err != nil {
				return false, fmt.Errorf("the brief is complete but cannot be written; make %s writable and run again: %w", briefPath, err)
			}
			hydrate(c, b)
			// Words the human sent while the clarifier worked were appended
			// to the file the write just replaced: put them back, and into
			// the brief the later steps read.
			if ch != nil {
				kept, err := ch.KeepAmendments()
				if err != nil {
					return false, fmt.Errorf("the brief is written but the words sent during clarify could not be kept in it; make %s writable and run again: %w", briefPath, err)
				}
				if kept != "" {
					c.Set(name+amendmentsSuffix, kept)
					c.Set(name, b.PromptBlock(lang)+"\n\n"+kept)
				}
			}
			return true, nil
		},
		Reduce: func(r StepResult, c *Ctx) string {
			if v, ok := c.Get(BriefKey); ok {
				if b, ok := v.(*doc.Brief); ok {
					block := b.PromptBlock(lang)
					if kept, ok := c.Get(name + amendmentsSuffix); ok {
						block += "\n\n" + fmt.Sprint(kept)
					}
					return block
				}
			}
			return r.Text
		},
		relang: relangWith(o.Lang, ch, func(l Lang) Step {
			o.Lang = l
			return ClarifyStep(ch, briefPath, prompt, o)
		}),
	}
}

// relangWith is a step constructor's relang: nil when the constructor was
// given a language, else build in the Runtime's language, after giving the
// channel that language unless it chose its own.
func relangWith(given Lang, ch *human.Channel, build func(Lang) Step) func(Lang) Step {
	if given != "" {
		return nil
	}
	return func(l Lang) Step {
		if ch != nil {
			ch.FollowLang(l)
		}
		return build(l)
	}
}

// amendmentsSuffix keys, after the clarify step's name, the words sent
// while it ran, which follow the brief in its value.
const amendmentsSuffix = "·amendments"

// loadDoc loads a document for a When: missing or unreadable, it is
// absent (nil). Unreadable is said (an event and the log), missing is the
// ordinary first run.
func loadDoc[D any](c *Ctx, lang Lang, what, path string, load func(string) (D, error)) D {
	d, err := load(path)
	if err == nil {
		return d
	}
	var zero D
	if !errors.Is(err, fs.ErrNotExist) {
		text := fmt.Sprintf(starterTextsFor(lang).unreadable, what, path, err)
		slog.Warn("flower: document", "notice", text)
		if f := c.OnEvent(); f != nil {
			safeCall("OnEvent", func() { f(event.New(event.System, text, map[string]any{"path": path})) })
		}
	}
	return zero
}

// channelOrNil turns a nil *human.Channel into a nil Channel, so that the
// roles see no channel rather than a typed nil.
func channelOrNil(ch *human.Channel) Channel {
	if ch == nil {
		return nil
	}
	return ch
}
