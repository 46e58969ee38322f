"""Runs written the way a VM of the receipt-ledger fork writes them (FORMATS.md generation 8),
and a second process that appends to one live.

Per completed statement the VM appends one receipt to ``receipts.jsonl`` (canonical JSON,
``prev`` = the previous line's ``content_hash``, ``content_hash`` over the receipt without
it), then rewrites ``run.json`` with ``receipt_count`` and ``ledger_head``; ``state.md``
narrates the run beside it. Written here from the format's description, not copied from a run.

Usage as the live writer (the tests run it with ``sys.executable``)::

    python receipt_ledger_vm.py append RUN_DIR
        Make RUN_DIR a run with a run_start receipt, print ``1``; then for each line
        ``more N`` on stdin append N session receipts (each followed by its run.json
        rewrite), printing the receipt count after each; ``end`` appends run_end and
        exits; stdin closing exits.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

RUN_ID = "20260716-093000-a1b2c3"
PROGRAM = "examples/research.prose"


def canonical(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def seal(receipt: dict[str, Any], prev: str | None) -> dict[str, Any]:
    """``receipt`` with ``prev`` and ``hash_algorithm`` set and ``content_hash`` computed."""
    body = {k: v for k, v in receipt.items() if k != "content_hash"}
    body["prev"] = prev
    body.setdefault("hash_algorithm", "sha256")
    body["content_hash"] = "sha256:" + hashlib.sha256(canonical(body).encode("utf-8")).hexdigest()
    return body


def receipt(statement_id: str, *, kind: str = "session", agent: str | None = "worker", status: str = "rendered",
            tokens: tuple[int, int] = (100, 20), basis: str = "estimated", detail: Any = None,
            error: Any = None, reused_from: Any = None, run_id: str = RUN_ID, **more: Any) -> dict[str, Any]:
    """One receipt before chaining (``seal`` chains it)."""
    usage = {"basis": basis, "input_tokens": tokens[0], "output_tokens": tokens[1],
             "model": "none" if basis == "unavailable" else "haiku"}
    out = {"v": "libretto.receipt.v1", "run_id": run_id, "statement_id": statement_id, "kind": kind,
           "agent": agent, "input_fingerprints": {}, "output_fingerprint": None, "status": status,
           "surprise_cause": None, "usage": usage, "error": error, "detail": detail, "reused_from": reused_from}
    out.update(more)
    return out


def control(event: str, outcome: str | None = None) -> dict[str, Any]:
    detail = {"event": event, **({"outcome": outcome} if outcome else {})}
    return receipt("run", kind="control", agent=None, tokens=(0, 0), basis="unavailable", detail=detail)


def chain(receipts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for r in receipts:
        out.append(seal(r, out[-1]["content_hash"] if out else None))
    return out


def write_ledger(run_dir: Path, sealed: list[dict[str, Any]]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "receipts.jsonl").write_text("".join(canonical(r) + "\n" for r in sealed), encoding="utf-8")


def write_anchor(run_dir: Path, sealed: list[dict[str, Any]], status: str = "completed", **more: Any) -> None:
    anchor = {"v": "libretto.run.v1", "run_id": RUN_ID, "program": PROGRAM, "state_backend": "filesystem",
              "status": status, "receipt_count": len(sealed),
              "ledger_head": sealed[-1]["content_hash"] if sealed else None, **more}
    (run_dir / "run.json").write_text(json.dumps(anchor, indent=2), encoding="utf-8")


STATE_MD = """# Run State — {run_id}

**Program:** `{program}`
**State backend:** filesystem
**Input:** topic = "tidal energy"
**Status:** {status}

## Execution

```prose
agent researcher:  # s001 (definition)
  model: haiku
let research = session: researcher  # s002 ✓ -> bindings/research.md
parallel:  # s003 ✓ joined (all, 2/2)
  a = session "pros"  # s003.b1 ✓
  b = session "cons"  # s003.b2 ✓
let draft = session "Draft the brief"  # s004 {draft_mark} -> bindings/draft.md
if **the draft is good enough**:  # s005; discretion s005.d1 -> TRUE
  let summary = session "Summarise" # s006 ∅ reused -> bindings/summary.md
do publish(draft)  # s007 ✓
session "Never reached"  # s008 (not executed)
```

## Discretion evaluation (s005.d1)

The draft covers both sides with sources: TRUE.

## Notes

Tokens are estimated (chars/4 over prompt and reply).
"""


def healthy_receipts(*, failed: bool = False) -> list[dict[str, Any]]:
    """The receipts of the run STATE_MD narrates: a retried statement, a parallel, a
    discretion, a memoized reuse and a block call; ``failed``: s004 fails for good instead."""
    timeout = {"type": "Timeout", "message": "agent timed out after 300 s", "retry_count": 0}
    rows = [
        control("run_start"),
        receipt("s002", agent="researcher", tokens=(46210, 1840), detail={"binding": "research"},
                output_fingerprint="sha256:" + "4b" * 32, input_fingerprints={"topic": "sha256:" + "9f" * 32}),
        receipt("s003.b1", kind="parallel_branch", agent="pros", tokens=(1200, 300), basis="exact"),
        receipt("s003.b2", kind="parallel_branch", agent="cons", tokens=(1100, 280), basis="exact"),
        receipt("s003", kind="control", agent=None, tokens=(0, 0), basis="unavailable",
                detail={"event": "join", "mode": "all", "joined": 2}),
        receipt("s004", agent="writer", status="failed", tokens=(900, 0), error=timeout),
    ]
    if failed:
        rows += [receipt("s004", agent="writer", status="failed", tokens=(950, 0), error={**timeout, "retry_count": 1}),
                 control("run_end", "failed")]
        return rows
    rows += [
        receipt("s004", agent="writer", tokens=(3000, 1200), detail={"binding": "draft"}),
        receipt("s005.d1", kind="discretion", agent=None, tokens=(400, 12),
                detail={"condition": "**the draft is good enough**", "outcome": "true", "branch": "then",
                        "reason": "covers both sides"}),
        receipt("s006", status="skipped", tokens=(0, 0), basis="unavailable",
                reused_from={"run_id": "20260715-080000-ffffff", "statement_id": "s006",
                             "output_fingerprint": "sha256:" + "aa" * 32}),
        receipt("s007", kind="block_call", agent=None, tokens=(10, 5)),
        control("run_end", "completed"),
    ]
    return rows


def write_run(run_dir: Path, *, failed: bool = False, state_md: bool = True, bindings: bool = True) -> list[dict[str, Any]]:
    """A finished run as the VM leaves it; returns its sealed receipts."""
    sealed = chain(healthy_receipts(failed=failed))
    write_ledger(run_dir, sealed)
    status = "failed" if failed else "completed"
    write_anchor(run_dir, sealed, status)
    if state_md:
        (run_dir / "state.md").write_text(STATE_MD.format(run_id=RUN_ID, program=PROGRAM, status=status,
                                                          draft_mark="✗ timeout" if failed else "✓"), encoding="utf-8")
    if bindings:
        (run_dir / "bindings").mkdir(exist_ok=True)
        (run_dir / "bindings" / "research.md").write_text("# research\nkind: let\n---\nTidal energy is ...\n")
        if not failed:
            (run_dir / "bindings" / "draft.md").write_text("# draft\nkind: let\n---\nA brief.\n")
    return sealed


def _append(run_dir: Path, sealed: list[dict[str, Any]], new: dict[str, Any]) -> None:
    sealed.append(seal(new, sealed[-1]["content_hash"] if sealed else None))
    with (run_dir / "receipts.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(canonical(sealed[-1]) + "\n")
    tmp = run_dir / "run.json.tmp"
    tmp.write_text(json.dumps({"v": "libretto.run.v1", "run_id": RUN_ID, "program": PROGRAM,
                               "state_backend": "filesystem", "status": "running", "receipt_count": len(sealed),
                               "ledger_head": sealed[-1]["content_hash"]}), encoding="utf-8")
    tmp.replace(run_dir / "run.json")


def _live(run_dir: Path) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    sealed: list[dict[str, Any]] = []
    _append(run_dir, sealed, control("run_start"))
    print(len(sealed), flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["more"]:
            for _ in range(int(words[1])):
                _append(run_dir, sealed, receipt(f"s{len(sealed) + 1:03d}", tokens=(len(sealed) * 10, 5)))
                print(len(sealed), flush=True)
        elif words[:1] == ["end"]:
            _append(run_dir, sealed, control("run_end", "completed"))
            print(len(sealed), flush=True)
            return


if __name__ == "__main__":
    if sys.argv[1:2] == ["append"]:
        _live(Path(sys.argv[2]))
    else:
        sys.exit(__doc__)
