package flower

// The goal guard's holes, through the starter flow on the real *Runtime
// driving the scripted CLI: a write of the goal or the brief that no hook
// sees (find -exec sed), and one made by a round that then ended in an
// error, so that no gate ran after it. Each is put back and reported at
// the next boundary, and the next run never takes it for the person's
// edit; the person's own edit between runs still is.

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flowerrun/flower/human"
	"github.com/flowerrun/flower/internal/testenv"
)

const (
	// holesGoalWeakened is the goal as `find . -name 目标.md -exec sed -i
	// 's/运行 ls,看到 hello.txt/什么都行/' {} \;` leaves it: the hook lets
	// the command through, since it names neither the goal's path nor its
	// folder.
	holesGoalWeakened = "# 目标\nhello.txt 存在且内容是 hello\n\n# 判定清单\n- 运行 cat hello.txt,看到 hello\n- 什么都行\n"
	// holesBriefWeakened is the brief as a sed on every .md file leaves it:
	// the boundary gone, the criteria loosened.
	holesBriefWeakened = "## 目标\n做一个 hello.txt\n\n## 验收标准\n- 什么都行\n\n## 边界\n什么都做\n\n## 未知与假设\n无\n"
	// holesWeak is the text both weakened files hold and no good one does.
	holesWeak = "什么都行"
)

// holesFlow is a fake flow with the goal's and the brief's paths.
type holesFlow struct {
	*fakeFlow
	goal, brief string
}

func newHolesFlow(t *testing.T) holesFlow {
	f := newFakeFlow(t)
	notes := filepath.Join(f.ws, ".flower", "notes")
	return holesFlow{fakeFlow: f, goal: filepath.Join(notes, "目标.md"), brief: filepath.Join(notes, "需求.md")}
}

// workWrites is the starter flow's script with the first work round
// writing files as a Bash command would (no hook sees it).
func workWrites(writes map[string]string, verdicts ...string) []fakeRule {
	rules := starterRules(verdicts...)
	for i := range rules {
		if rules[i].Match == "照这份需求做" {
			rules[i].Writes = writes
		}
	}
	return rules
}

// failRounds makes every work round whose prompt holds the work's first
// words end in an error result, after its scripted writes; undo lets
// them succeed again.
func (f holesFlow) failRounds() (undo func()) {
	f.t.Helper()
	marker := filepath.Join(f.calls, "fail")
	if err := os.WriteFile(marker, []byte("照这份需求做"), 0o600); err != nil {
		f.t.Fatal(err)
	}
	return func() {
		if err := os.Remove(marker); err != nil {
			f.t.Error(err)
		}
	}
}

// holdCalls holds every call whose prompt holds marker and hands each
// held call's number (1 first) to at, then releases it: the test sees and
// acts on the disk while that session runs. The returned func waits for
// the holder to finish (the held calls it expects were seen).
func (f holesFlow) holdCalls(marker string, calls int, at func(k int)) (wait func()) {
	f.t.Helper()
	if err := os.WriteFile(filepath.Join(f.calls, "hold"), []byte(marker), 0o600); err != nil {
		f.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for k := 1; k <= calls; k++ {
			held := filepath.Join(f.calls, "held-"+strconv.Itoa(k))
			deadline := time.Now().Add(time.Minute)
			for {
				if _, err := os.Stat(held); err == nil {
					break
				}
				if time.Now().After(deadline) {
					f.t.Errorf("call %d holding %q never came", k, marker)
					return
				}
				time.Sleep(10 * time.Millisecond)
			}
			at(k)
			if k == calls {
				// Later calls (the next run's) run unheld.
				os.Remove(filepath.Join(f.calls, "hold"))
			}
			os.WriteFile(filepath.Join(f.calls, "release-"+strconv.Itoa(k)), nil, 0o600)
		}
	}()
	return func() {
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			f.t.Fatal("the held calls were not all seen")
		}
	}
}

func (f holesFlow) working() bool {
	_, err := os.Stat(filepath.Join(human.Dir(f.runDir), "guarded", "working"))
	return err == nil
}

// A find -exec sed over the goal and the brief is a write no hook sees:
// the round's gate puts both back before the judge reads anything, the
// person is told once for each, and the judge's prompt says so.
func TestHolesFindExecSedIsPutBackAtTheRoundsGate(t *testing.T) {
	t.Parallel()
	f := newHolesFlow(t)
	f.script(workWrites(map[string]string{
		".flower/notes/目标.md": holesGoalWeakened,
		".flower/notes/需求.md": holesBriefWeakened,
	}, fakeDone))
	var ev events
	_, _, c := f.runStarter("帮我做一个 hello", f.options(), ev.add)
	if at, failed := c.FailedAt(); failed {
		t.Fatalf("failed at %s", at)
	}
	for _, p := range []string{f.goal, f.brief} {
		if got := readText(t, p); strings.Contains(got, holesWeak) {
			t.Errorf("%s was not put back:\n%s", p, got)
		}
	}
	restored := ev.guard("restored")
	if len(restored) != 2 || !strings.Contains(restored[0].Text+restored[1].Text, f.goal) || !strings.Contains(restored[0].Text+restored[1].Text, f.brief) {
		t.Fatalf("the person was not told once for each file: %v", restored)
	}
	j := f.callsMatching("判定这一轮")
	if len(j) != 1 {
		t.Fatalf("judge calls: %d", len(j))
	}
	if p := j[0].Prompt; strings.Count(p, "flower 已把上一个有效版本放回去") != 2 || !strings.Contains(p, f.goal) || !strings.Contains(p, f.brief) || strings.Contains(p, holesWeak) {
		t.Errorf("the judge was not told of both, or saw the changed goal:\n%s", p)
	}
}

// A round that writes the goal or the brief and then ends in an error has
// no gate: the step's failure path is the boundary. The file is back
// before anything else runs (the bequest, which reads it), the person is
// told, the run ends without its working mark, and the next run (a new
// process on the same folders) judges against the good goal and takes no
// amendment of the brief.
func TestHolesAWriteByARoundThatEndedInAnErrorIsPutBack(t *testing.T) {
	t.Parallel()
	testenv.AsOrdinaryUser(t)
	for _, tc := range []struct{ name, rel, weak string }{
		{"the goal", ".flower/notes/目标.md", holesGoalWeakened},
		{"the brief", ".flower/notes/需求.md", holesBriefWeakened},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHolesFlow(t)
			path := filepath.Join(f.ws, tc.rel)
			f.script(workWrites(map[string]string{tc.rel: tc.weak}, fakeDone))
			undo := f.failRounds()
			var atBequest string
			wait := f.holdCalls("给下一个接手这个仓库", 1, func(int) { b, _ := os.ReadFile(path); atBequest = string(b) })
			o := f.options()
			o.Rounds = 1
			var ev events
			_, rt, c := f.runStarter("帮我做一个 hello", o, ev.add)
			wait()
			if at, failed := c.FailedAt(); !failed || at != "干活" {
				t.Fatalf("the flow did not stop at the work: %q %v (%v)", at, failed, labels(t, rt))
			}
			if strings.Contains(atBequest, holesWeak) || atBequest == "" {
				t.Errorf("the bequest ran on %s as the failed round left it:\n%s", path, atBequest)
			}
			if got := readText(t, path); strings.Contains(got, holesWeak) {
				t.Errorf("the run ended with %s as the failed round left it:\n%s", path, got)
			}
			restored := ev.guard("restored")
			if len(restored) != 1 || !strings.Contains(restored[0].Text, path) {
				t.Fatalf("the person was not told once: %v", restored)
			}
			if v, _ := c.Get(RestoredKey); !slices.Equal(v.([]string), []string{path}) {
				t.Errorf("the ending is not told: %v", v)
			}
			if f.working() {
				t.Error("the run ended and left its working mark")
			}

			undo()
			goals := len(f.callsMatching("变成一个可判定的目标"))
			var ev2 events
			_, _, c2 := f.runStarter("", f.options(), ev2.add)
			if at, failed := c2.FailedAt(); failed {
				t.Fatalf("the second run failed at %s", at)
			}
			if got := readText(t, path); strings.Contains(got, holesWeak) {
				t.Errorf("the second run took the failed round's %s:\n%s", path, got)
			}
			if n := len(f.callsMatching("变成一个可判定的目标")); n != goals {
				t.Errorf("the second run set the goal again (%d calls, %d before): it took a tool's edit for the person's", n, goals)
			}
			if w := f.callsMatching("设定目标之后,需求确认书改过了"); len(w) != 0 {
				t.Errorf("the second run told the work the brief changed:\n%s", w[0].Prompt)
			}
			j := f.callsMatching("判定这一轮")
			if len(j) == 0 || !strings.Contains(j[len(j)-1].Prompt, "运行 ls,看到 hello.txt") || strings.Contains(j[len(j)-1].Prompt, holesWeak) {
				t.Errorf("the second run's judge did not judge the good goal: %d calls", len(j))
			}
		})
	}
}

// A round that writes the goal and ends in an error, with rounds left:
// the goal is back before the next round starts, and the next round's
// judge is told what was put back.
func TestHolesTheNextRoundAfterAnErrorStartsOnTheGoodGoal(t *testing.T) {
	t.Parallel()
	f := newHolesFlow(t)
	f.script(workWrites(map[string]string{".flower/notes/目标.md": holesGoalWeakened}, fakeDone))
	undo := f.failRounds()
	var atRound2 string
	wait := f.holdCalls("照这份需求做", 2, func(k int) {
		if k == 2 {
			b, _ := os.ReadFile(f.goal)
			atRound2 = string(b)
			undo()
		}
	})
	var ev events
	_, rt, c := f.runStarter("帮我做一个 hello", f.options(), ev.add)
	wait()
	if at, failed := c.FailedAt(); failed {
		t.Fatalf("failed at %s (%v)", at, labels(t, rt))
	}
	if strings.Contains(atRound2, holesWeak) || atRound2 == "" {
		t.Errorf("round 2 started on the goal the failed round left:\n%s", atRound2)
	}
	restored := ev.guard("restored")
	if len(restored) != 1 || !strings.Contains(restored[0].Text, f.goal) {
		t.Fatalf("the person was not told once: %v", restored)
	}
	j := f.callsMatching("判定这一轮")
	if len(j) != 1 || !strings.Contains(j[0].Prompt, "flower 已把上一个有效版本放回去") || !strings.Contains(j[0].Prompt, f.goal) {
		t.Errorf("the judge of the round after the error was not told: %+v", j)
	}
}

// The person's edit between runs is theirs even after a run that ended in
// an error: that run's last boundary cleared its working mark.
func TestHolesThePersonsEditAfterAFailedRunIsAdopted(t *testing.T) {
	t.Parallel()
	f := newHolesFlow(t)
	f.script(workWrites(map[string]string{".flower/notes/需求.md": holesBriefWeakened}, fakeDone))
	undo := f.failRounds()
	o := f.options()
	o.Rounds = 1
	f.runStarter("帮我做一个 hello", o, nil)
	undo()
	edited := "# 目标\nhello.txt 存在且内容是 hello\n\n# 判定清单\n- 运行 cat hello.txt,看到 hello\n- 运行 wc -c hello.txt,看到 6\n"
	if err := os.WriteFile(f.goal, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	var ev events
	_, _, c := f.runStarter("", f.options(), ev.add)
	if at, failed := c.FailedAt(); failed {
		t.Fatalf("failed at %s", at)
	}
	if got := readText(t, f.goal); got != edited {
		t.Errorf("the person's edit was undone:\n%s", got)
	}
	if r := ev.guard("restored"); len(r) != 0 {
		t.Errorf("the person's edit was reported as tampering: %v", r)
	}
	j := f.callsMatching("判定这一轮")
	if len(j) == 0 || !strings.Contains(j[len(j)-1].Prompt, "运行 wc -c hello.txt,看到 6") {
		t.Error("the judge did not judge the person's goal")
	}
}

// The same Workflow run twice in one process: the first run's last
// boundary ends its watch, so the person's edit between the two runs is
// theirs, not a change to undo.
func TestHolesThePersonsEditBetweenTwoRunsOfOneWorkflowIsAdopted(t *testing.T) {
	t.Parallel()
	f := newHolesFlow(t)
	f.script(starterRules(fakeDone))
	wf, err := StarterFlow("帮我做一个 hello", f.options())
	if err != nil {
		t.Fatal(err)
	}
	rt := f.runtime(WithWorkbench(wf.Workbench))
	if c, err := wf.Run(runCtx(t), rt, nil, nil); err != nil {
		t.Fatal(err)
	} else if at, failed := c.FailedAt(); failed {
		t.Fatalf("the first run failed at %s", at)
	}
	edited := "# 目标\nhello.txt 存在且内容是 hello\n\n# 判定清单\n- 运行 cat hello.txt,看到 hello\n- 运行 wc -c hello.txt,看到 6\n"
	if err := os.WriteFile(f.goal, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	var ev events
	c, err := wf.Run(runCtx(t), rt, ev.add, nil)
	if err != nil {
		t.Fatal(err)
	}
	if at, failed := c.FailedAt(); failed {
		t.Fatalf("the second run failed at %s", at)
	}
	if got := readText(t, f.goal); got != edited {
		t.Errorf("the person's edit was undone:\n%s", got)
	}
	if r := ev.guard("restored"); len(r) != 0 {
		t.Errorf("the person's edit was reported as tampering: %v", r)
	}
}

// A tool that makes the goal unreadable, or puts a folder in its place,
// changes it as surely as one that rewrites it (a goal the next run cannot
// load would be set anew from the brief): the round's gate puts the file
// back and says so, and the next run keeps the goal.
func TestHolesAGoalMadeUnreadableOrAFolderIsPutBack(t *testing.T) {
	t.Parallel()
	testenv.AsOrdinaryUser(t)
	for name, tamper := range map[string]func(path string) error{
		"unreadable": func(p string) error { return os.Chmod(p, 0) },
		"a folder": func(p string) error {
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.MkdirAll(filepath.Join(p, "x"), 0o755)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newHolesFlow(t)
			f.script(starterRules(fakeDone))
			var tamperErr error
			wait := f.holdCalls("照这份需求做", 1, func(int) { tamperErr = tamper(f.goal) })
			var ev events
			_, _, c := f.runStarter("帮我做一个 hello", f.options(), ev.add)
			wait()
			if tamperErr != nil {
				t.Fatalf("the tool's part: %v", tamperErr)
			}
			if at, failed := c.FailedAt(); failed {
				t.Fatalf("failed at %s", at)
			}
			fi, err := os.Stat(f.goal)
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o400 == 0 {
				t.Fatalf("the goal is not a readable file again: %v %v", fi, err)
			}
			if got := readText(t, f.goal); !strings.Contains(got, "运行 ls,看到 hello.txt") {
				t.Errorf("the goal was not put back:\n%s", got)
			}
			if r := ev.guard("restored"); len(r) != 1 || !strings.Contains(r[0].Text, f.goal) {
				t.Errorf("the person was not told once: %v", r)
			}
			goals := len(f.callsMatching("变成一个可判定的目标"))
			f.runStarter("", f.options(), nil)
			if n := len(f.callsMatching("变成一个可判定的目标")); n != goals {
				t.Errorf("the next run set the goal anew (%d calls, %d before)", n, goals)
			}
		})
	}
}

// A file a tool changed that cannot be put back (its folder replaced by a
// file: not even root writes there) is told as not put back, to the person
// and the judge, and the working mark stays, so the next run puts it back
// rather than adopt the change as the person's.
func TestHolesAFileThatCannotBePutBackIsNotToldAsPutBack(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	goal := filepath.Join(dir, "notes", "goal.md")
	if err := os.MkdirAll(filepath.Dir(goal), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(goal, []byte("# Goal\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := NewCtx()
	var ev events
	c.Set(KeyOnEvent, func(e Event) { ev.add(e) })
	copies := guardCopies{dir: state}
	w := goalWatchFor(c, nil, copies, goal)
	w.snapshot()
	// A tool puts a file where the goal's folder was.
	if err := os.RemoveAll(filepath.Dir(goal)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Dir(goal), []byte("gone"), 0o644); err != nil {
		t.Fatal(err)
	}
	notes := w.atGate(c, English)
	if len(notes) != 1 || !strings.Contains(notes[0], "could not put the last good version back") || strings.Contains(notes[0], "flower put the last good version back") {
		t.Fatalf("notes for the judge: %q", notes)
	}
	if got := ev.guard("stuck"); len(got) != 1 || got[0].Str("path") != goal {
		t.Errorf("stuck events: %v", got)
	}
	if got := ev.guard("restored"); len(got) != 0 {
		t.Errorf("a file that was not put back was told as put back: %v", got)
	}
	finalCheck(c, English)
	if _, err := os.Stat(filepath.Join(state, workingMark)); err != nil {
		t.Errorf("the working mark went, so the next run would adopt the change: %v", err)
	}
}
