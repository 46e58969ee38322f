"""Remote runs over ssh (issue 34): bytes on the link, live latency, opening a big run.

    python benchmarks/bench_ssh.py [--events 40] [--writes 60] [--big 100000]

Starts a real sshd on 127.0.0.1 (tests/ssh_server.py: throwaway keys) and reads the runs
through the system ``ssh`` client, as ``prose-tui ssh://…`` does. Figures, not assertions:

* bytes: a remote event log grows at 2 events/s; every byte on ssh's pipes (both ways,
  frames and compression included; ssh's own encryption overhead is not on the pipes) over
  the number of events. Target: <= 200 B/event.
* latency: an append on the host until the local copy holds it; and a line appended to
  the binding on screen until the explorer (headless, run_test) hands out the frame that
  shows it, local folder vs the remote copy. Target: p95 within 30 ms of local.
* open: a 100,000-event run until the explorer (headless) shows its trace, local vs over
  ssh (connect and copy included) on loopback; and through a relay (a ProxyCommand) that
  adds 100 ms each way and paces at 1 Mbit/s, standing in for ``tc netem``, which needs
  CAP_NET_ADMIN on a device that other processes of this machine share.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from generate import EventLogWriter  # noqa: E402
from ssh_server import HOST, sshd_missing, start_sshd  # noqa: E402

from prose_tui.remote import RemoteState  # noqa: E402
from prose_tui.remote.client import Mirror, RemoteSpec, ssh_argv  # noqa: E402


def _mirror(command: str, path: Path) -> Mirror:
    spec = RemoteSpec(HOST, str(path))
    return Mirror(spec, ssh_command=ssh_argv(spec, {"PROSE_TUI_SSH_COMMAND": command})).start(timeout=600)


def bytes_per_event(command: str, events: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventLogWriter(Path(tmp))
        writer.append(200)
        mirror = _mirror(command, Path(tmp))
        copy = mirror.local / writer.state.relative_to(tmp)
        try:
            start = mirror.bytes_in + mirror.bytes_out
            for _ in range(events):
                writer.append(1)
                time.sleep(0.5)  # 2 events/s
            mirror.wait_for(lambda: copy.stat().st_size == writer.state.stat().st_size, 30)
            total = mirror.bytes_in + mirror.bytes_out - start
            line = len(f"{writer.count}→ step_{writer.count} ✓ [09:00:00]\n".encode())
            return {"events": events, "bytes": total, "per_event": total / events, "line_bytes": line,
                    "first_sync": start}
        finally:
            mirror.close()


def link_latency(command: str, writes: int) -> list[float]:
    """ms from an append on the host until the local copy holds it (what ssh adds to the
    local pipeline, which then reads the copy as it reads any folder)."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventLogWriter(Path(tmp))
        mirror = _mirror(command, Path(tmp))
        copy = mirror.local / writer.state.relative_to(tmp)
        try:
            for _ in range(writes):
                t0 = time.perf_counter()
                writer.append(1)
                size = writer.state.stat().st_size
                if mirror.wait_for(lambda: copy.stat().st_size == size, 10):
                    out.append((time.perf_counter() - t0) * 1000)
                time.sleep(0.1)
        finally:
            mirror.close()
    return out


async def _latency(app_path: Path, binding: Path, writes: int, sources=(), written: list | None = None) -> list[float]:
    from prose_tui.tui.app import ProseTUI
    from prose_tui.tui.widgets.value_viewer import ValueViewer

    app = ProseTUI(app_path, watch=True, sources=list(sources))
    frames: list[float] = []
    original = app._display

    def timed_display(screen, renderable):
        frames.append(time.perf_counter())
        return original(screen, renderable)

    app._display = timed_display  # type: ignore[method-assign]

    async def until(predicate, timeout: float = 10.0) -> bool:
        deadline = time.perf_counter() + timeout
        while not predicate():
            if time.perf_counter() > deadline:
                return False
            await asyncio.sleep(0.0005)
        return True

    shown_binding = app_path / binding.relative_to(binding.parents[4]) if sources else binding
    samples: list[float] = []
    async with app.run_test(size=(120, 40)):
        explorer = app.explorer
        await until(lambda: explorer.watcher_state.startswith("watching"), 20)
        await until(lambda: explorer.current_run is not None, 20)
        explorer.query_one("#tree").select_binding_path(shown_binding)
        viewer = explorer.query_one(ValueViewer)
        await until(lambda: viewer.target is not None and viewer.target.path == shown_binding, 20)
        for i in range(writes):
            marker = f"bench line {i}"
            t0 = time.perf_counter()
            with open(binding, "a", encoding="utf-8") as fh:
                fh.write(f"\n{marker}\n")
            if written is not None:
                written.append(t0)
            if await until(lambda: marker in viewer.text):
                t1 = time.perf_counter()
                await until(lambda: frames and frames[-1] >= t1, 2.0)
                samples.append((next(f for f in frames if f >= t1) - t0) * 1000)
            await asyncio.sleep(0.1)
    return samples


def latency(command: str, writes: int) -> dict:
    from prose_tui.demo import DemoVM

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "proj"
        project.mkdir()
        vm = DemoVM(project)
        steps = vm.steps()
        for _ in range(12):
            next(steps)
        binding = sorted((vm.run_dir / "bindings").glob("*.md"))[0]
        out["local"] = asyncio.run(_latency(project, binding, writes))
        mirror = _mirror(command, project)
        applied: list[float] = []
        bump = mirror._bump  # stamps each change the copy took (private: a benchmark's probe)

        def stamped() -> None:
            applied.append(time.perf_counter())
            bump()

        mirror._bump = stamped  # type: ignore[method-assign]
        written: list[float] = []
        try:
            out["ssh"] = asyncio.run(_latency(mirror.local, binding, writes, [RemoteState(mirror)], written))
        finally:
            mirror.close()
        out["link"] = [(next(a for a in applied if a >= w) - w) * 1000 for w in written if applied and applied[-1] >= w]
    return out


async def _first_screen(path: Path, t0: float, sources=()) -> float:
    """Seconds from ``t0`` until the explorer on ``path`` shows the run's trace."""
    from prose_tui.tui.app import ProseTUI
    from prose_tui.tui.widgets.trace_view import TraceView

    app = ProseTUI(path, watch=True, sources=list(sources))
    async with app.run_test(size=(120, 40)) as pilot:
        while True:
            run = app.explorer.current_run
            if run is not None and app.explorer.query_one(TraceView).lines:
                return time.perf_counter() - t0
            await pilot.pause()


def open_big(command: str, events: int) -> dict:
    """The explorer's first screen of a big event-log run: local, and over ssh (connect and
    copy included), on loopback and through the relay."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventLogWriter(Path(tmp))
        for _ in range(events // 10_000):
            writer.append(10_000)
        t0 = time.perf_counter()
        out["local"] = asyncio.run(_first_screen(writer.run, t0))
        for name, cmd in (("loopback", command), ("relay 100 ms + 1 Mbit/s", _relayed(command))):
            t0 = time.perf_counter()
            mirror = _mirror(cmd, writer.run)
            out[name + " (copy)"] = time.perf_counter() - t0
            try:
                out[name] = asyncio.run(_first_screen(mirror.local, t0, [RemoteState(mirror)]))
                out[name + " bytes"] = mirror.bytes_in + mirror.bytes_out
            finally:
                mirror.close()
        t0 = time.perf_counter()
        subprocess.run([*shlex.split(command), HOST, "true"], check=True)
        out["login"] = time.perf_counter() - t0
        out["log_bytes"] = writer.state.stat().st_size
    return out


async def _newest_on_screen(path: Path, t0: float, newest: str, sources=()) -> float:
    """Seconds from ``t0`` until the explorer on ``path`` shows the event ``newest`` in its trace."""
    from prose_tui.tui.app import ProseTUI

    app = ProseTUI(path, watch=True, sources=list(sources))
    async with app.run_test(size=(120, 40)) as pilot:
        while True:
            run = app.explorer.current_run
            if run is not None and run.trace and newest in run.trace[-1].text:
                return time.perf_counter() - t0
            await pilot.pause()


def first_screen_relayed(command: str, events: int) -> dict:
    """The newest event of a ``events``-event remote run on the explorer's screen, through the
    relay (100 ms each way, 1 Mbit/s), connect included; and when the whole log is copied."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        writer = EventLogWriter(Path(tmp))
        for _ in range(events // 10_000):
            writer.append(10_000)
        spec = RemoteSpec(HOST, str(writer.run))
        mirror = Mirror(spec, ssh_command=ssh_argv(spec, {"PROSE_TUI_SSH_COMMAND": _relayed(command)}))
        t0 = time.perf_counter()
        try:
            try:
                mirror.start(timeout=600, complete=False)
            except TypeError:  # before issue 34's tail first: the whole copy comes first
                mirror.start(timeout=600)
            out["start"] = time.perf_counter() - t0
            out["screen"] = asyncio.run(_newest_on_screen(mirror.local, t0, f"step_{writer.count} ",
                                                          [RemoteState(mirror)]))
            copy = mirror.local / writer.state.relative_to(writer.run)
            mirror.wait_for(lambda: copy.stat().st_size == writer.state.stat().st_size, 600)
            out["whole"] = time.perf_counter() - t0
            out["bytes"] = mirror.bytes_in + mirror.bytes_out
        finally:
            mirror.close()
    return out


def host_read_cost(megabytes: int, appends: int) -> dict:
    """What the reader on the host reads and spends per change of a growing ``megabytes`` MB
    event log (the reader run in this process, as it runs on a host; bytes from
    ``/proc/self/io`` ``rchar``, the page cache warm)."""
    import io

    from prose_tui.remote.reader import Reader

    def rchar() -> int:
        return int(next(line for line in Path("/proc/self/io").read_text().splitlines()
                        if line.startswith("rchar:")).split()[1])

    with tempfile.TemporaryDirectory() as tmp:
        writer = EventLogWriter(Path(tmp))
        while writer.state.stat().st_size < megabytes * 1_000_000:
            writer.append(20_000)
        reader = Reader(-1, io.BytesIO())
        reader.hello({"root": tmp, "watch": "polling"})
        reads, times = [], []
        for _ in range(appends):
            writer.append(1)
            reader.out = io.BytesIO()
            r0, t0 = rchar(), time.perf_counter()
            reader.scan(None)
            times.append((time.perf_counter() - t0) * 1000)
            reads.append(rchar() - r0)
        return {"bytes": statistics.median(reads), "ms": times, "size": writer.state.stat().st_size}


def _relayed(command: str) -> str:
    return command + " -o " + shlex.quote(f"ProxyCommand={sys.executable} {Path(__file__).resolve()} relay %h %p")


def relay(host: str, port: int, delay: float = 0.1, rate_bps: float = 1_000_000) -> None:
    """A ProxyCommand: stdin/stdout <-> host:port; each direction delays every chunk by
    ``delay`` s (pipelined: chunks in flight together, as on a long link) and paces the
    bytes at ``rate_bps``, as ``tc netem delay 100ms rate 1mbit`` would on one interface."""
    import queue

    sock = socket.create_connection((host, port))

    def direction(read, write, done) -> None:
        held: queue.Queue = queue.Queue()

        def send() -> None:
            free_at = 0.0
            while (item := held.get()) is not None:
                arrived, data = item
                start = max(arrived + delay, free_at)
                free_at = start + len(data) * 8 / rate_bps
                time.sleep(max(0.0, free_at - time.monotonic()))
                write(data)
            done()

        threading.Thread(target=send, daemon=True).start()
        while data := read(4096):
            held.put((time.monotonic(), data))
        held.put(None)

    up = threading.Thread(target=direction, args=(lambda n: os.read(0, n), sock.sendall,
                                                  lambda: sock.shutdown(socket.SHUT_WR)), daemon=True)
    up.start()
    finished = threading.Event()
    direction(sock.recv, lambda d: os.write(1, d), finished.set)
    finished.wait()


def _pct(samples: list[float]) -> str:
    qs = statistics.quantiles(samples, n=100, method="inclusive")
    return f"p50 {qs[49]:6.1f}  p95 {qs[94]:6.1f}  max {max(samples):6.1f} ms (n={len(samples)})"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "relay":
        relay(sys.argv[2], int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=40)
    parser.add_argument("--writes", type=int, default=60)
    parser.add_argument("--big", type=int, default=100_000)
    parser.add_argument("--only", default="bytes,latency,open,first,host",
                        help="the cases to run, comma-separated (bytes, latency, open, first, host)")
    args = parser.parse_args()
    only = set(args.only.split(","))
    missing = sshd_missing()
    if missing:
        print(f"skipped: {missing}")
        return
    if "host" in only:
        cost = host_read_cost(100, 30)
        print(f"host, per append to a {cost['size'] / 1e6:.0f} MB log: {cost['bytes'] / 1e3:.1f} KB read (median); "
              f"scan {_pct(cost['ms'])}")
    server = start_sshd()
    try:
        if "first" in only:
            first = first_screen_relayed(server.command, args.big)
            print(f"relay 100 ms + 1 Mbit/s, {args.big}-event run: newest event on screen {first['screen']:.2f} s "
                  f"(start returned {first['start']:.2f} s), whole log copied {first['whole']:.2f} s, "
                  f"{first['bytes']} B on the link")
        if not only & {"bytes", "latency", "open"}:
            return
        b = bytes_per_event(server.command, args.events)
        print(f"bytes on the link at 2 events/s: {b['per_event']:.0f} B/event ({b['bytes']} B for {b['events']} events "
              f"of {b['line_bytes']} B each; first sync of the 200-event run: {b['first_sync']} B incl. the reader)")
        print(f"latency, host write -> local copy: {_pct(link_latency(server.command, args.writes))}")
        lat = latency(server.command, args.writes)
        print(f"latency, local: {_pct(lat['local'])}")
        print(f"latency, ssh:   {_pct(lat['ssh'])}")
        print(f"  of which host write -> copy, in the explorer's process: {_pct(lat['link'])}")
        big = open_big(server.command, args.big)
        print(f"first screen of a {args.big}-event run ({big['log_bytes']} B log): local {big['local']:.2f} s; "
              f"`ssh {HOST} true` alone takes {big['login']:.2f} s here")
        for name in ("loopback", "relay 100 ms + 1 Mbit/s"):
            print(f"  {name}: {big[name]:.2f} s (connect and copy {big[name + ' (copy)']:.2f} s, "
                  f"{big[name + ' bytes']} B on the link)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
