package app

import "strings"

const exitCodes = `Exit codes:
  0    done
  1    stopped on purpose, message on stderr: cancelled, empty request, missing
       or rejected credentials, a failed step, a directory that cannot be
       written
  2    a command-line error: unknown command or flag, bad flag value
  130  Ctrl-C twice: stopped, everything resumable (run flower again to go on)
  128+N killed by signal N (SIGTERM, SIGHUP) after the in-flight step was
       recorded
`

const globalFlags = `Global flags (before or after the command):
  -w, --workspace DIR   the repository to work in (default .); a DIR that does not
      --create          exist is refused (on a terminal: asked) unless --create
  -r, --run-dir DIR     run records (default <workspace>/runs; a relative DIR is from here)
  -v, --verbose         also subagent prose, tool output, prompts, the credentials in use
  -W, --workbench       run/once: a workbench in <run-dir>/workbench (go always has one)
  -T, --trim            trim old tool results when a session resumes (default on for go,
      --no-trim         off for run and once)
      --lang en|zh      flower's language (default: the run directory's, else the
                        locale's: LC_ALL, LC_MESSAGES, LANG; zh* is Chinese, else English)
      --yes             install the pinned Claude Code CLI with npm without asking

The Claude Code CLI: FLOWER_CLAUDE=/path/to/claude, else flower's pinned copy in
${XDG_CACHE_HOME:-~/.cache}/flower/claude-cli/<version>, else claude on PATH (with a
warning outside the tested versions); with none, go, run, once and demo install the
pinned version there with npm (one question on a terminal; --yes for scripts).
A one-word request a typo away from a command is asked about ("did you mean …?");
off a terminal it is refused (exit 2): flower go WORD sends it anyway.
`

const filesWritten = `Files written:
  <run-dir>/sessions.db, manifest.json, lineage.json, events.jsonl   the run's records
  <run-dir>/aside/                 side questions (? lines), kept apart
  ${XDG_STATE_HOME:-~/.local/state}/flower/runs/<run-dir key>/
                                   the human's side, outside the workspace so no agent
                                   writes it: pending.json, replies/ (flower reply),
                                   words/ (every typed word until a run delivered it)
  <workspace>/.flower/             the workbench: INDEX.md scripts/ artifacts/ notes/ spill/
  ${XDG_CONFIG_HOME:-~/.config}/flower/.env   credentials (flower setup, mode 0600)
  ${XDG_CACHE_HOME:-~/.cache}/flower/claude-cli/   the pinned Claude Code CLI (npm)

A run in PostgreSQL, so any machine of a team can continue it:
  FLOWER_DATABASE_URL=postgres://user:password@host:5432/db
                        keeps the run's sessions and files (run dir, the human's
                        side, the workbench) in the database; each machine works in
                        its own checkout and HOME, one machine at a time
  FLOWER_RUN=NAME       the run's name there (default: the repository's first
                        commit, the workspace's path in it and the run dir's: the
                        same on every clone)
  FLOWER_DATABASE_LEASE=30s   how soon another machine may take over a run whose
                        machine died (a live run beats every third of it)
`

func (m *Command) usage() string {
	return strings.ReplaceAll(`flower runs a coding agent for hours without losing the thread.

Usage:
  flower "build X"          start (or continue) work on a request in this directory
  flower                    ask for the request, or offer to continue the last one
  flower once "prompt"      one step of an ad-hoc agent, no workflow
  flower setup              configure the API key, gateway and model
  flower reply "words"      answer a waiting question of a run in this directory
  flower run                run a workflow program of your own (see flower run --help)
  flower demo               the whole flow offline on a simulated model: no credentials
  flower report [run_dir]   one HTML page of a run: cost, context, verdicts, timeline

A team's queue on one PostgreSQL (see flower submit --help):
  flower submit --repo REPO "request"   queue a run for any free worker
  flower worker             work queued runs on this machine, each on its own branch
  flower runs [RUN]         the runs: state, host, step, cost, age (--state, --limit)
  flower workers            the workers: state, runs held, last heard from
  flower worker --drain NAME  ask a worker to finish and leave
  flower runs prune --ended-before 30d   remove old ended runs' rows
  flower reply RUN "answer"   answer a run's question from any machine
  flower cancel RUN         stop a run cleanly
  flower retry RUN          put a failed (parked) run back in the queue
  flower report RUN         the report page of a run, from the database
  (the database: $FLOWER_DATABASE_URL, --db-file F, or --db URL without its password)

Examples:
  flower "add a --json flag to the CLI" --rounds 2
  flower -w ~/src/app --timeout 0 "fix the failing tests" < /dev/null
  flower once -t Read,Grep "where is the config parsed?"
  flower reply 2
  flower report --open

`+globalFlags+`
`+exitCodes+`
`+filesWritten+`
flower <command> --help shows each command's flags.
`, "flower", m.name())
}

func (m *Command) goUsage() string {
	return strings.ReplaceAll(`Usage: flower [go] [flags] ["request"]

Clarifies the request into a brief (asking you when it must), sets a goal with a
checklist, then works in rounds until a judge rules the goal achieved. Run it again
in the same directory to continue; type during the run to add to the request, or
start a line with ? (or ？) to ask a side question.

Flags:
  --asks N          question quota: 0 = none, -1 = unlimited (default -1)
  --rounds N        work rounds in all, at least 1 (default 3)
  --no-goal         no goal step and no verdicts: one round of work
  --judge-can-run   both judges (goal and round) may run Bash to verify
  --check-network   flower's own runs of the checklist's commands before each
                    verdict may use the network (off by default; they run in a
                    sandbox and their writes are thrown away)
  --timeout SEC     how long a question waits (default 1800); 0 = settle every
                    question at once (for unattended runs); forever = until answered
  --isolate         workers use git worktrees (needs a git repository)
  --window N        the context window in tokens (default: from the model name)
  --no-handoff      let the CLI compact instead of handing off to a fresh session
  --new             archive the last brief, goal and lineage and start afresh
  --continue        after an achieved goal, add the request to it instead of starting anew
  --clarify-only    stop after the brief
  --resume-run      carry this directory's run on where it stopped, without asking:
                    REQUEST is the one it started with (used only before its brief
                    exists), never added to the brief (a team's worker passes it)
  --budget USD      stop cleanly when the whole run has cost this much
  --notify CMD      run CMD (sh -c) whenever a question starts waiting; also FLOWER_NOTIFY
                    in the environment or a .env. CMD sees FLOWER_QUESTION,
                    FLOWER_QUESTION_ID, FLOWER_CHOICES (one a line), FLOWER_WORKSPACE,
                    FLOWER_RUN_DIR. It runs at most 30 s; a failure is reported once and
                    never stops the run.
  --no-bequest      skip the end-of-run hand-over

Examples:
  flower "build a CSV importer" --asks 3 --rounds 2
  flower --timeout 0 "upgrade the dependencies" < /dev/null
  flower --notify 'notify-send "flower asks" "$FLOWER_QUESTION"' "build X"
  flower --notify 'curl -s -d "$FLOWER_QUESTION" ntfy.sh/my-flower' "build X"

`+globalFlags+`
`+exitCodes+`
`+filesWritten, "flower", m.name())
}

func (m *Command) onceUsage() string {
	return strings.ReplaceAll(`Usage: flower once [flags] "prompt"

One step of an ad-hoc agent ("ad-hoc"): no workflow, no questions, no interrupt;
the first Ctrl-C ends it. Its session is recorded in <run-dir> like any step.

Flags:
  -i, --instructions TEXT      appended to Claude Code's system prompt
  -t, --tools LIST             tools approved without asking (default Read,Glob,Grep)
  -p, --permission-mode MODE   default, acceptEdits, plan or bypassPermissions (default default)
  -b, --budget USD             cap this step's cost
      --resume SESSION_ID      continue a session
      --fork                   with --resume: continue a copy of it

Examples:
  flower once "summarize README.md in three lines"
  flower once -t Read,Edit -p acceptEdits "fix the typo in main.go"
  flower once --resume 5f1c… --fork "now try the other approach"

`+globalFlags+`
`+exitCodes, "flower", m.name())
}

func (m *Command) demoUsage() string {
	return strings.ReplaceAll(`Usage: flower demo [--lang en] [-w DIR]

Shows every stage of a run (a question, the brief, the goal, two rounds under the
judge, the hand-over) on the real Claude Code CLI talking to a simulated model that
this process serves on 127.0.0.1 from a script. No credentials are read, nothing
leaves the machine, nothing is paid for. The files go to a fresh temporary folder
(or -w DIR).

Try what you would in a real run: answer its question yourself (hello.txt will say
what you typed; a simulated human answers only after you had 15 s and stopped
typing), ask a side question with a line starting with ?, press Ctrl-C once to
interrupt with a few words, twice to quit; `+"`flower demo -w DIR`"+` continues it.


Finds the Claude Code CLI as every command does (FLOWER_CLAUDE, flower's pinned copy
in the cache, PATH) and, with none, installs the pinned version with npm (--yes: without
asking). Its language follows the locale; --lang en or --lang zh chooses.

`+exitCodes, "flower", m.name())
}

func (m *Command) setupUsage() string {
	return strings.ReplaceAll(`Usage: flower setup

Asks for the API key (or a gateway's token), the gateway address and the model, sends
one small probe request, and saves them to ${XDG_CONFIG_HOME:-~/.config}/flower/.env
(mode 0600), read by every flower run. It first shows what the file holds now (keys
masked); the key is read without echo. Credentials the gateway rejects are not saved:
the old file stays as it was (exit 1); a probe that gets no answer says why and saves
only when you answer y. Ctrl-C at any point leaves at once and writes nothing (exit
130). Needs a terminal.

Without a terminal, write the file yourself or export the variables:
  ANTHROPIC_API_KEY=sk-ant-…     (or ANTHROPIC_AUTH_TOKEN=… for a gateway)
  ANTHROPIC_BASE_URL=https://…   (a gateway; default Anthropic)
  ANTHROPIC_MODEL=…

Where a run finds them, the first value found winning: the environment, $FLOWER_ENV,
./.env, this file, the .env beside the flower binary, the env block of
~/.claude/settings.json. A .env in the folder flower starts in (a cloned repository's,
say) gives only a key and the models (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN,
ANTHROPIC_*MODEL, CLAUDE_CODE_SUBAGENT_MODEL, CLAUDE_CODE_EFFORT_LEVEL): its
ANTHROPIC_BASE_URL, FLOWER_CLAUDE, FLOWER_NOTIFY and every other variable are ignored,
and the run says so at start. So a repository never chooses where your key is sent,
which claude runs or what command runs. Put the gateway address in this file.

setup also says what protects the coordinator's glances: a bubblewrap sandbox
(read-only, no network, no key; Linux, package bubblewrap) or the parser alone.

`+exitCodes, "flower", m.name())
}

func (m *Command) replyUsage() string {
	return strings.ReplaceAll(`Usage: flower reply [flags] "words"

Answers the waiting question of the run in this directory (-w/-r as for the run), or,
when none waits, leaves the words in its inbox. A number picks that choice. It waits
for the run to take the reply (up to --wait) and says what became of it.

Flags:
  --question Q answer question Q (default: the oldest waiting); --id Q is the same
  --skip       decline the question: it judges for itself
  --mail       leave a message for the inbox even when a question waits
  --wait D     how long to wait for the run (default 10s; 0 = do not wait)
  --db-file F  a run of the team's queue instead (its database's URL in file F, or
  --db URL     without its password, or $FLOWER_DATABASE_URL with a run such as r12):
               flower reply r12 "answer" reaches the worker running it at once

A question's id is the one the run gives it: its questions and the messages it
is sent share one counter (q1, m2, q3…), and flower runs r12 lists each question
with its id ("q1 asked: …"). For a run of the team's queue:
  flower reply r12 "answer"            answers the question waiting now; refused
                                       when none waits (nothing is kept)
  flower reply r12 --question q3 "…"   answers q3: at once if it waits, else kept
                                       until the run asks q3 (and given to q3 only)
A question answered, declined or timed out already, one the run is past and never
asked, an id not of the form qN, or a run that ended: the reply is refused, and
nothing is kept.

Examples:
  flower reply "use PostgreSQL"
  flower reply 2
  flower -w ~/src/app reply --mail "also keep the old API"
  flower reply r12 --question q1 "call it zed"

`+exitCodes, "flower", m.name())
}

func (m *Command) runUsage() string {
	return strings.ReplaceAll(`Usage: flower run

Runs a workflow of your own. In Go a workflow is a program: give its main
app.Main(yourFlow) and it takes flower's whole command line (the go flags,
credentials, screen, Ctrl-C, exit codes):

`+runExample+`

`, "flower", m.name())
}

func (m *Command) reportUsage() string {
	return strings.ReplaceAll(`Usage: flower report [flags] [run_dir]

Writes one self-contained HTML page (no network, no external fonts or scripts) of
a run directory (default <workspace>/runs, or -r DIR) and its workbench, and prints
the page's path. Its top says why the run cost what it did: the request, the
outcome and its reason, duration, tokens, cost and the three largest cost drivers,
a column per wake. Then, in the run's language: the timeline of steps, sessions,
handoffs, retries, interrupts with their words, answers, verdicts and waits over
every wake; the cost per step, round, role and model against the run budget; the
main thread's context per turn against the handoff threshold and the window; main
thread against subagents; cache reuse; verdicts; questions, answers and inbox
messages; tools, denials, spills and workbench scripts; the manifest and links to
the brief, goal, handoffs and bequest. It only reads: the session store is opened
read-only, so a running flower is never blocked, and nothing is written into the
run directory or the workbench. A file it cannot read is named on stderr and on the
page, and the rest is shown.

Flags:
  -o, --output FILE   where the page goes (default $TMPDIR/flower-report-<id>.html,
                      one per run directory)
  --open              also open the page with xdg-open or open, where there is one
  --json              print the page's data as JSON on stdout instead (no page)
  --db-file F RUN     a run of the team's queue, rendered from the database (its URL
                      in file F, or --db URL without its password, or
                      $FLOWER_DATABASE_URL with a run such as r12)

Examples:
  flower report
  flower report --open ~/src/app/runs
  flower report -o /tmp/run.html -w ~/src/app
  flower report --json | jq .cost.total

Exit codes:
  0    the page was written (or the JSON printed), even when some files could not
       be read (they are named on stderr)
  1    no such directory, no run in it, or the page could not be written
  2    a command-line error: unknown flag, more than one run_dir, --json with -o/--open
`, "flower", m.name())
}

const teamFlags = `The team's database (one for the whole team, holding the queue, every run's
state and transcripts), in the first of:
  --db-file FILE   a file holding postgres://user:password@host:5432/db, yours
                   and mode 0600 (chmod 600 FILE): one others read is refused
  --db URL         postgres://user@host:5432/db without its password, which
                   comes from ~/.pgpass (or $PGPASSFILE, or $PGPASSWORD); a
                   password in --db is refused: every user sees a command line
  $FLOWER_DATABASE_URL   the whole URL, password included
`

func (m *Command) submitUsage() string {
	return strings.ReplaceAll(`Usage: flower submit [--db-file FILE] --repo REPO [--branch B] [--budget USD] "request"

Queues a run of the request against a git repository. A free worker takes it,
clones REPO, works on the run's own branch flower/rN (made from B) and pushes its
work there after every step, every handoff and at the end. Prints the run's name.

Flags:
  --repo REPO     a git URL or path every worker can reach (checked from here first)
  --branch B      the branch to start from (default: the repository's default branch)
  --budget USD    stop the run cleanly when it has cost this much, on every worker together
  --no-check      do not check from this machine that REPO and B exist

Examples:
  flower submit --db-file ~/.config/flower/team-db --repo git@host:app.git "add a --json flag"
  flower submit --db postgres://flower@db:5432/flower --repo /srv/git/app.git --branch develop --budget 5 "fix the flaky tests"

`+teamFlags+"\n"+exitCodes, "flower", m.name())
}

func (m *Command) workerUsage() string {
	return strings.ReplaceAll(`Usage: flower worker [--db-file FILE] [--concurrency N] [--dir DIR]

Works queued runs on this machine until stopped: each in its own checkout under
DIR with its own HOME for the CLI, its state in the database. Ctrl-C or SIGTERM:
takes no new run, stops those in flight as resumable (the step in flight
recorded, the work pushed) and gives them back to the queue. A worker that dies
(SIGKILL, power, network) is not heard from; after --rescue its runs go to
another worker, which continues each from its last pushed commit and its state
in the database. A worker continues any run whose state protocol it reads,
whatever flower build started it.

Flags:
  --concurrency N     runs at once (default 1)
  --dir DIR           checkouts, HOMEs and logs (default ./flower-worker)
  --name NAME         the worker's name in flower runs (default host-pid); the
                      name of a live worker is refused
  --rescue D          how long a run may go unconfirmed before another worker
                      takes it (default 2m, at least 4s; this worker confirms
                      every quarter of it)
  --team-budget USD   take no new run once all runs together have cost this much
                      (every worker; 0 lifts it; left out, it stays as set)
  --max-failures N    park a run that failed on N workers (default 3); failed
                      attempts are retried 10s, 30s, 90s... apart
  --lang en|zh        the runs' language
  --unconfined        run the runs without bubblewrap (they can then read what
                      this user can: other runs, this HOME); refused otherwise
  --keep-failed D     keep a failed (parked) run's folder under DIR this long
                      (default 72h); an ended run's other folders go at its end
  --drain NAME        do not work: ask the worker NAME to drain as on SIGTERM
                      (it sees this within a quarter of its --rescue)
  --log-format F      text (default) or json: the worker's log on stderr, one
                      line per record with its run, attempt, worker and step;
                      passwords and keys masked
  --metrics ADDR      serve Prometheus metrics on http://ADDR/metrics and
                      /healthz (200 while the database and DIR are usable,
                      503 and why otherwise); default none. It binds where
                      told: 127.0.0.1:9100 for this machine alone

The CLI and credentials are found as for flower go (FLOWER_CLAUDE, flower
setup, the environment). A run never gets them: it reaches the model through
this worker's proxy on 127.0.0.1 with a token of its own, revoked when it
ends, and it never sees the database. bubblewrap confines each run to its own
checkout, HOME and folders: the rest of DIR, this HOME, /tmp and other
processes are hidden from it.

`+teamFlags+"\n"+exitCodes, "flower", m.name())
}

func (m *Command) workersUsage() string {
	return strings.ReplaceAll(`Usage: flower workers [--db-file FILE]

Every worker that ever joined the team: its state, the runs it holds out of
how many it works at once, when it was last heard from, how long it has run,
its host and flower version. States: working (holds runs), idle, draining
(finishing its tool calls, then releasing its runs), silent (not heard from for
longer than its --rescue: down, paused or cut off; its runs go to others), gone
(stopped cleanly), broken (its own environment is; the line below says why).
Ages are the database's clock: a worker whose clock is off is named below.

To make a worker finish and leave: flower worker --drain NAME.

`+teamFlags+"\n"+exitCodes, "flower", m.name())
}

func (m *Command) pruneUsage() string {
	return strings.ReplaceAll(`Usage: flower runs prune [--db-file FILE] --ended-before AGE
       flower runs prune [--db-file FILE] RUN...

Removes from the database every row of the runs that ended (achieved, stopped,
failed, cancelled) before AGE, or of the runs named: their events, replies,
jobs, state files and transcripts, and the runs themselves. A queued, running
or waiting run is never removed (naming one is refused). Their branches stay
in the repository. AGE is an age (30d, 12h, 90m) or a date (2026-01-31,
2026-01-31T15:04).

`+teamFlags+"\n"+exitCodes, "flower", m.name())
}

func (m *Command) runsUsage() string {
	return strings.ReplaceAll(`Usage: flower runs [--db-file FILE] [--state S[,S]] [--limit N] [RUN]

The team's runs, newest first: each one's state (queued, running on a host,
waiting for a person, achieved, stopped, failed, cancelled), step and round,
cost against its budget, age and why it waits or ended. With RUN (r12): that
run in detail, with its recent events.

Flags:
  --state S[,S]   only the runs in these states (e.g. --state failed,queued)
  --limit N       at most N runs (default 50; 0: all); a last line says how
                  many more there are

flower runs prune --ended-before 30d removes ended runs' rows (see its --help).

`+teamFlags+"\n"+exitCodes, "flower", m.name())
}

func (m *Command) retryUsage() string {
	return strings.ReplaceAll(`Usage: flower retry [--db-file FILE] RUN

Puts a failed (parked) run back in the queue. A free worker continues it from
its pushed branch and its state in the database, as after a takeover. Its
earlier failures stay in its record (flower runs RUN); only new ones count
towards parking it again. A run in any other state is refused (exit code 1).

`+teamFlags+"\n"+exitCodes, "flower", m.name())
}

func (m *Command) cancelUsage() string {
	return strings.ReplaceAll(`Usage: flower cancel [--db-file FILE] RUN

Stops a run, however long it has run. A queued run is never worked; a running
one is stopped by its worker, which writes its state back and pushes its work
to the run's branch first. A run whose worker died stays cancelled: no worker
starts it again. A run that already ended is refused (exit code 1).

`+teamFlags+"\n"+exitCodes, "flower", m.name())
}
