"""How fast a big Claude Code transcript is indexed and parsed (seeds/in-context.md): prints figures.

Generates a ~100 MB ``.jsonl`` transcript (``--mb``) in a temporary folder: user turns with
large tool results, assistant turns with tool calls and narration text blocks (bracket
markers, block frames, loops, parallel blocks, bindings), a few broken lines. Then times:

* ``NarrationIndex`` (the one-pass line index) with its progress callback
* the first screen: ``index.load(stop=FIRST)`` on the first lines
* the full parse (``index.load()``), and ``load_narration`` end to end
* ``sniff_narration`` and a ``NarrationTail`` poll after an append

Usage: ``python benchmarks/bench_narration.py [--mb 100]``
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from prose_tui.backends.narration.parse import (
    NarrationIndex,
    NarrationTail,
    load_narration,
    sniff_narration,
)

FIRST = 5_000


def _assistant(ts: str, text: str, tool: bool) -> str:
    content = [{"type": "text", "text": text}]
    if tool:
        content.append({"type": "tool_use", "id": "toolu_1", "name": "Task", "input": {"prompt": "Do the step. " * 20}})
    return json.dumps({"type": "assistant", "message": {"role": "assistant", "content": content}, "timestamp": ts, "sessionId": "bench"})


def generate(path: Path, megabytes: int) -> int:
    target = megabytes * 1_000_000
    filler = "result line with some output text " * 120  # ~4 KB tool result
    written = 0
    n = 0
    eid = 0
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(_assistant("2026-05-01T00:00:00Z", "[Program] Program Start: bench.prose", False) + "\n")
        while written < target:
            n += 1
            ts = f"2026-05-01T{(n // 3600) % 24:02d}:{(n // 60) % 60:02d}:{n % 60:02d}Z"
            if n % 50 == 1:
                eid += 1
                text = (f"[Position] Statement {n}: do process(chunk{n})\n"
                        f"[Frame+] Entering block: process (execution_id: {eid}, depth: 1)")
            elif n % 50 == 0:
                text = f"[Frame-] Exiting block: process (execution_id: {eid})"
            elif n % 10 == 3:
                text = (f"[Parallel] Entering parallel block (2 branches, strategy: all)\n- a{n}: pending\n- b{n}: pending\n"
                        f"[Parallel] Parallel complete:\n- a{n} = \"alpha {n}\"\n- b{n} = \"beta {n}\"\n[Binding] a{n}, b{n} bound")
            elif n % 10 == 5:
                text = f"[Loop] Iteration {n % 7 + 1} of max 8"
            else:
                text = (f"Continuing with the next statement.\n[Position] Statement {n}: let r{n} = session \"Step {n}\"\n"
                        f"[Task tool call]")
            line = _assistant(ts, text, tool=True) + "\n"
            line += json.dumps({"type": "user", "message": {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": filler}]}, "timestamp": ts}) + "\n"
            line += _assistant(ts, f"[Success] Session complete: \"done {n}\"\n[Binding] let r{n} = <result> (execution_id: {eid})", False) + "\n"
            if n % 5000 == 0:
                line += '{"type": "assistant", "message": {"role": "assist\n'  # a broken line
            fh.write(line)
            written += len(line)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=int, default=100)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-narration-") as tmp:
        path = Path(tmp) / "session.jsonl"
        t0 = time.perf_counter()
        size = generate(path, args.mb)
        print(f"generated {size / 1e6:.1f} MB transcript in {time.perf_counter() - t0:.1f} s")
        t0 = time.perf_counter()
        ok = sniff_narration(path)
        print(f"sniff_narration: {ok} in {(time.perf_counter() - t0) * 1000:.0f} ms")
        calls = []
        t0 = time.perf_counter()
        index = NarrationIndex(path, progress=lambda done, total: calls.append(done))
        t1 = time.perf_counter()
        print(f"index: {len(index):,} lines in {(t1 - t0) * 1000:.0f} ms ({len(calls)} progress calls)")
        first = index.load(stop=FIRST)
        t2 = time.perf_counter()
        print(f"first screen (first {FIRST:,} lines): {(t2 - t1) * 1000:.0f} ms, {len(first.events):,} events; "
              f"index + first screen: {(t2 - t0) * 1000:.0f} ms")
        full = index.load()
        t3 = time.perf_counter()
        print(f"full parse: {(t3 - t2) * 1000:.0f} ms, {len(full.events):,} events, {len(full.bindings):,} bindings, "
              f"{len(full.warnings)} warnings")
        t0 = time.perf_counter()
        run = load_narration(path)
        print(f"load_narration end to end: {(time.perf_counter() - t0) * 1000:.0f} ms ({len(run.events):,} events)")
        tail = NarrationTail(path)
        t0 = time.perf_counter()
        tail.poll()
        t1 = time.perf_counter()
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(_assistant("2026-05-02T00:00:00Z", "[Program] Program Complete", False) + "\n")
        new = tail.poll()
        t2 = time.perf_counter()
        print(f"tail: first poll (whole file) {(t1 - t0) * 1000:.0f} ms; poll after an append {(t2 - t1) * 1000:.2f} ms "
              f"({len(new)} new events)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
