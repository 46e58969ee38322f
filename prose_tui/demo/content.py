"""Text the demo VM writes: programs, binding values, agent memory (all invented for the demo).

Values are Markdown templates; ``{{key}}`` tokens are filled by :func:`fill` from a context
dict built from the simulator's seed (pull-request numbers, versions), so one seed always
yields the same bytes. Nothing here performs I/O.
"""

from __future__ import annotations


def fill(text: str, ctx: dict[str, str]) -> str:
    """Replace every ``{{key}}`` in ``text`` by ``ctx[key]``; unknown keys stay as written."""
    for key, value in ctx.items():
        text = text.replace("{{" + key + "}}", value)
    return text


PROGRAM_NAME = "release-notes.prose"

PROGRAM = '''\
# release-notes.prose: draft the notes for the next release
use "acme/summarize" as summarize

input repo: "the repository to release"
const audience = "people upgrading from the last release"

agent scout:
  model: sonnet
  prompt: "You read change logs and pull requests carefully"

agent captain:
  model: opus
  persist: true
  prompt: "You coordinate the release and review every draft"

agent archivist:
  model: haiku
  persist: project
  prompt: "You keep the project's release history"

let changes = session: scout
  prompt: "Collect the changes merged since the last release"
  context: repo

let plan = resume: captain
  prompt: "Plan the release notes from the change list"
  context: { changes, audience }

parallel:
  features = session: scout
    prompt: "Summarise the new features"
    context: { changes, plan }
  fixes = session: scout
    prompt: "Summarise the bug fixes"
    context: { changes, plan }
  risks = session: scout
    prompt: "List breaking changes and upgrade risks"
    context: { changes, plan }

block process(chunk):
  let parts = session "Split the chunk into smaller sections"
    context: chunk
  if **the sections are still too large**:
    do process(parts)
  let result = session "Write release-note prose for the sections"
    context: parts
    retry: 3

let draft = do process({ features, fixes, risks })

loop until **the captain approves the notes** (max: 3):
  let review = resume: captain
    prompt: "Review the draft; say APPROVED when it is ready"
    context: draft
  draft = session "Revise the draft from the review"
    context: { draft, review }

let tldr = summarize(text: draft)

let archive_note = resume: archivist
  prompt: "Record what shipped in this release"
  context: { draft, tldr }

session "Check every link in the notes"
  context: draft

output notes = session "Assemble the final release notes"
  context: { draft, tldr, risks, audience }
'''

CHILD_HANDLE = "acme--summarize"
CHILD_NAME = "summarize.prose"
CHILD_PROGRAM = '''\
# acme/summarize: condense a text into a short summary
input text: "the text to summarise"

agent condenser:
  model: haiku
  prompt: "You write short, faithful summaries"

let points = session: condenser
  prompt: "List the key points of the text"
  context: text

output summary = session: condenser
  prompt: "Write a three-sentence summary from the key points"
  context: points
'''

ENV = """\
OPENPROSE_TELEMETRY=disabled
USER_ID=user-demo-{{uid}}
SESSION_ID=sess-demo-{{sid}}
"""

VALUES: dict[str, str] = {}

VALUES["repo"] = "github.com/example/lanternfish (branch `main`, last tag `v{{prev}}`)\n"
VALUES["audience"] = "people upgrading from the last release\n"

VALUES["changes"] = """\
# Changes merged since v{{prev}}

{{n}} pull requests were merged into `main` between the `v{{prev}}` tag and today.

## By area

| Area | Pull requests | Notes |
|------|---------------|-------|
| Scheduler | #{{p1}}, #{{p2}}, #{{p3}} | new cron syntax, jitter, drift fix |
| Storage | #{{p4}}, #{{p5}} | WAL compaction, checksum on read |
| CLI | #{{p6}}, #{{p7}}, #{{p8}} | `--json` everywhere, shell completion |
| Docs | #{{p9}} | upgrade guide draft |

## Pull requests

1. #{{p1}} **Scheduler: accept six-field cron expressions** (seconds field, optional)
2. #{{p2}} **Scheduler: add `jitter:` to spread jobs that share a minute**
3. #{{p3}} **Scheduler: fix clock drift after suspend/resume on laptops**
4. #{{p4}} **Storage: compact the write-ahead log in the background**
5. #{{p5}} **Storage: verify page checksums on read, fail loudly on mismatch**
6. #{{p6}} **CLI: every listing command gains `--json`**
7. #{{p7}} **CLI: bash, zsh and fish completion scripts**
8. #{{p8}} **CLI: remove the deprecated `lf run --legacy` flag**
9. #{{p9}} **Docs: first draft of the upgrade guide**

## Commits without a pull request

- `3f2a9c1` bump minimum Python to 3.10
- `a81d0e4` vendor `tomli` for Python < 3.11
- `77c0b5e` typo fixes in the README

## Not merged (left for the next release)

- Plugin API (design still under review)
- Windows service wrapper
"""

VALUES["plan"] = """\
# Release plan for v{{next}}

The notes go to **people upgrading from v{{prev}}**, so lead with what changes for them.

## Sections
1. Highlights (two or three sentences)
2. New features, grouped by area
3. Bug fixes
4. Breaking changes and how to upgrade

## Assignments
- scout: features, fixes and risks **in parallel**
- recursive pass: turn the three lists into prose, splitting until each part is small
- captain (me): review until approved, at most three rounds
"""

VALUES["features"] = """\
# New features

### Scheduler
- **Six-field cron** (#{{p1}}): a leading seconds field is now accepted; five-field
  expressions keep working unchanged.
- **Jitter** (#{{p2}}): `jitter: 30s` spreads jobs that would all fire on the same minute.

### Storage
- **Background WAL compaction** (#{{p4}}): the write-ahead log no longer grows until restart.

### CLI
- **`--json` on every listing command** (#{{p6}}), for scripts and dashboards.
- **Shell completion** (#{{p7}}) for bash, zsh and fish:

```sh
lf completion zsh > "${fpath[1]}/_lf"
```
"""

VALUES["fixes"] = """\
# Bug fixes

- Scheduler: jobs no longer fire twice after a laptop resumes from sleep (#{{p3}}).
- Storage: a corrupted page is now reported with its offset instead of returning
  garbage (#{{p5}}).
- README typos.
"""

VALUES["risks"] = """\
# Breaking changes and upgrade risks

| Change | Who is affected | What to do |
|--------|-----------------|------------|
| `lf run --legacy` removed (#{{p8}}) | scripts still using the flag | drop the flag; behaviour is the default since v0.9 |
| Python 3.10 minimum | installs on 3.8/3.9 | upgrade Python before upgrading lanternfish |
| Checksums verified on read (#{{p5}}) | stores with silent corruption | run `lf store verify` before upgrading |

**Risk level:** medium. The checksum change can surface old corruption as new errors.
"""

PARTS = {
    1: """\
# Sections (pass 1)

Split the three lists into two chunks:

- **A.** features and fixes (user-visible changes)
- **B.** breaking changes (needs its own careful wording)

Chunk A is still long: split again.
""",
    2: """\
# Sections (pass 2)

Chunk A split in two:

- **A1.** scheduler and storage
- **A2.** command line

A1 mixes a new feature with a behaviour change: split once more.
""",
    3: """\
# Sections (pass 3)

- **A1a.** cron and jitter
- **A1b.** drift fix and background compaction

Each section now fits in one paragraph.
""",
}

RESULTS = {
    3: """\
Cron expressions may now carry a leading **seconds** field, and the new `jitter:` setting
spreads jobs that share a minute. Laptops that sleep no longer run jobs twice on
resume, and the write-ahead log is compacted in the background.
""",
    2: """\
## Scheduler and storage

Cron expressions may now carry a leading **seconds** field, and the new `jitter:` setting
spreads jobs that share a minute. Laptops that sleep no longer run jobs twice on
resume, and the write-ahead log is compacted in the background.

## Command line

Every listing command accepts `--json`, and completion scripts ship for bash, zsh and fish.
""",
}
RESULTS[1] = (
    "# Draft release notes\n\n" + RESULTS[2] + """
## Before you upgrade

- `lf run --legacy` is gone; drop the flag.
- Python 3.10 is now the minimum.
- Page checksums are verified on read: run `lf store verify` first.
"""
)

REVIEWS = {
    1: """\
# Review, round 1

Not approved yet.

- The highlights paragraph is missing: readers skim the first lines only.
- Link every item to its pull request.
- Move "Before you upgrade" to the top: it is what this audience needs first.
""",
    2: """\
# Review, round 2

APPROVED.

One nit: say "six-field cron" in the highlights so people can search for it.
""",
}

DRAFTS = {
    1: """\
# lanternfish v{{next}}

**Highlights:** cron with seconds, jitter for crowded minutes, and `--json` on every listing.

## Before you upgrade

- `lf run --legacy` is gone (#{{p8}}); drop the flag.
- Python 3.10 is now the minimum.
- Page checksums are verified on read (#{{p5}}): run `lf store verify` first.

## Scheduler and storage

Cron expressions may carry a leading seconds field (#{{p1}}); `jitter:` spreads jobs
that share a minute (#{{p2}}). Jobs no longer fire twice after resume (#{{p3}}), and the
write-ahead log is compacted in the background (#{{p4}}).

## Command line

Every listing command accepts `--json` (#{{p6}}); completion for bash, zsh and fish (#{{p7}}).
""",
}
DRAFTS[2] = DRAFTS[1].replace("cron with seconds", "six-field cron (seconds)")

CHILD_VALUES = {
    "points": """\
# Key points

1. Six-field cron and per-job jitter
2. Sleep/resume double-run fixed; background WAL compaction
3. `--json` and shell completion in the CLI
4. Upgrade needs Python 3.10, no `--legacy`, and a store verify
""",
    "summary": """\
lanternfish v{{next}} adds six-field cron, jitter and `--json` output across the CLI.
It fixes double runs after sleep and compacts its log in the background.
Before upgrading, move to Python 3.10, drop `--legacy` and run `lf store verify`.
""",
}

VALUES["archive_note"] = """\
# Archived

Recorded v{{next}} in the project history (`.prose/agents/archivist/memory.md`):
4 features, 2 fixes, 1 removal, medium upgrade risk.
"""

VALUES["anon_001"] = """\
# Link check

| Link | Status |
|------|--------|
| #{{p1}} .. #{{p9}} (9 pull requests) | 200 OK |
| docs/upgrade.md | 200 OK |
| docs/cron.md#seconds | **404** (anchor renamed to `#six-field`) |

Fixed in the draft: the cron link now points to `docs/cron.md#six-field`.
"""

NOTES_TAIL = """

## Full change list

""" + "\n".join(
    f"- {area}: {text} (#{{{{p{i}}}}})"
    for i, (area, text) in enumerate(
        [
            ("scheduler", "six-field cron expressions"),
            ("scheduler", "`jitter:` for jobs sharing a minute"),
            ("scheduler", "no double run after suspend/resume"),
            ("storage", "background write-ahead-log compaction"),
            ("storage", "checksums verified on read"),
            ("cli", "`--json` on every listing command"),
            ("cli", "bash, zsh and fish completion"),
            ("cli", "`lf run --legacy` removed"),
            ("docs", "upgrade guide"),
        ],
        start=1,
    )
) + """

## Upgrade checklist

```sh
python3 --version          # 3.10 or later
lf store verify            # before the upgrade, on every store
pip install -U lanternfish=={{next}}
lf --version
```

## Thanks

Thanks to everyone who reported the double-run bug with a reproduction: it made the fix easy.
"""

CAPTAIN_MEMORY = {
    1: """\
# Agent Memory: captain

## Current Understanding
Release v{{next}} of lanternfish: {{n}} merged pull requests, audience is upgraders.

## Decisions Made
- Lead with upgrade steps, then features
- Scout writes features, fixes and risks in parallel

## Open Concerns
- The checksum change may surface old corruption as new errors
""",
    2: """\
# Agent Memory: captain

## Current Understanding
Draft v1 exists; structure is right but it lacks highlights and PR links.

## Decisions Made
- Lead with upgrade steps, then features
- Asked for highlights and links (round 1)

## Open Concerns
- The checksum change may surface old corruption as new errors
""",
    3: """\
# Agent Memory: captain

## Current Understanding
Draft approved in round 2. Ready for summary and archive.

## Decisions Made
- Lead with upgrade steps, then features
- Approved round 2 with one wording nit (six-field cron)

## Open Concerns
- None blocking
""",
}

CAPTAIN_SEGMENTS = {
    1: ("Plan the release notes from the change list",
        "- Read: change list ({{n}} PRs)\n- Decided: four sections, upgrade steps first\n"
        "- Next: review the draft the recursive pass produces"),
    2: ("Review the draft; say APPROVED when it is ready",
        "- Reviewed: draft v1\n- Found: no highlights, missing PR links\n- Decided: not approved"),
    3: ("Review the draft; say APPROVED when it is ready",
        "- Reviewed: draft v2\n- Found: all round-1 points addressed\n- Decided: APPROVED"),
}

ARCHIVIST_MEMORY = """\
# Agent Memory: archivist

## Current Understanding
lanternfish ships roughly monthly; notes lead with upgrade steps.

## Releases recorded
- v{{prev}}: scheduler rewrite
- v{{next}}: six-field cron, jitter, `--json`, checksums on read

## Open Concerns
- Plugin API slipped twice; watch for it next release
"""

ARCHIVIST_SEGMENT = (
    "Record what shipped in this release",
    "- Recorded: v{{next}} (4 features, 2 fixes, 1 removal)\n- Next: check the plugin API next time",
)

# The two small finished runs that precede the live demo run (write_history_runs).
HISTORY_DONE_NAME = "triage-issues.prose"
HISTORY_DONE = '''\
# triage-issues.prose: label the week's new issues
agent triager:
  model: haiku
  prompt: "You label issues by area and severity"

let issues = session: triager
  prompt: "List the issues opened this week"

output labels = session: triager
  prompt: "Propose an area and a severity for each issue"
  context: issues
'''
HISTORY_DONE_VALUES = {
    "issues": "# Issues opened this week\n\n- #{{p1}} cron ignores seconds\n- #{{p3}} jobs run twice after sleep\n",
    "labels": "| Issue | Area | Severity |\n|-------|------|----------|\n"
    "| #{{p1}} | scheduler | feature |\n| #{{p3}} | scheduler | high |\n",
}

HISTORY_FAILED_NAME = "publish-docs.prose"
HISTORY_FAILED = '''\
# publish-docs.prose: build and publish the documentation site
let site = session "Build the documentation site"

session "Publish the site to the docs bucket"
  context: site
  retry: 3
'''
HISTORY_FAILED_VALUES = {
    "site": "# Build\n\n```\nbuilt 42 pages in 3.1s (0 warnings)\n```\n",
}
HISTORY_FAILED_ERROR = (
    "The publish session failed on all 3 attempts: the docs bucket refused the upload "
    "(403 Forbidden: credentials expired). The site build in bindings/site.md is intact; "
    "renew the credentials and run again."
)
