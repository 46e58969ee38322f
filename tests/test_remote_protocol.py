"""The remote reader's protocol and path rule, without SSH (issue 34).

The framing is tested on bytes; the reader runs as a real second process started the way ssh
starts it on a host (``python3 -c LOADER`` with the program on its stdin), minus ssh.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from prose_tui.remote import parse_remote
from prose_tui.remote.client import LOADER, Mirror, RemoteError, RemoteSpec, reader_program, ssh_argv
from prose_tui.remote.protocol import MAX_FRAME, MAX_MESSAGE, FrameError, FrameReader, FrameWriter
from prose_tui.remote.reader import Refused, inside

LOG = "# run:20260301-100000-abcdef triage.prose\n1→ fetch ✓\n2→ draft ✓\n"


def test_frames_round_trip_with_bodies_and_the_stream_compresses_repeats():
    writer, reader = FrameWriter(), FrameReader()
    messages = [({"op": "append", "path": f".prose/runs/r/vm.log.md", "offset": n * 20}, f"{n}→ step ✓\n".encode())
                for n in range(50)]
    frames = [writer.encode(m, b) for m, b in messages]
    assert reader.feed(b"".join(frames)) == messages
    assert len(frames[-1]) < len(frames[0]) / 2  # the keys and path cost almost nothing after the first


def test_a_frame_torn_across_reads_waits_for_its_rest():
    writer, reader = FrameWriter(), FrameReader()
    frame = writer.encode({"op": "file", "path": "state.md"}, b"x" * 5000)
    got = []
    for i in range(0, len(frame), 7):  # 7 bytes at a time, the 4-byte header torn too
        got += reader.feed(frame[i:i + 7])
        if i + 7 < len(frame):
            assert got == [] and reader.pending > 0
    assert got == [({"op": "file", "path": "state.md"}, b"x" * 5000)]
    assert reader.pending == 0


def test_an_oversized_frame_is_refused_before_its_bytes_arrive():
    reader = FrameReader()
    with pytest.raises(FrameError, match="over the limit"):
        reader.feed((MAX_FRAME + 1).to_bytes(4, "big") + b"\0" * 10)


def test_an_oversized_message_is_refused_on_both_ends():
    with pytest.raises(FrameError, match="over the limit"):
        FrameWriter().encode({"op": "file"}, b"\0" * MAX_MESSAGE)
    import zlib

    z = zlib.compressobj()
    bomb = z.compress(b"{}" + b" " * (MAX_MESSAGE + 10)) + z.flush(zlib.Z_SYNC_FLUSH)  # small on the wire
    assert len(bomb) < MAX_FRAME
    with pytest.raises(FrameError, match="over the limit"):
        FrameReader().feed(len(bomb).to_bytes(4, "big") + bomb)


def test_garbage_is_not_a_frame():
    with pytest.raises(FrameError):
        FrameReader().feed((5).to_bytes(4, "big") + b"hello")


def test_the_path_rule_refuses_dotdot_absolute_and_symlinks_out(tmp_path):
    root = tmp_path / "served"
    (root / "run").mkdir(parents=True)
    (root / "run" / "state.md").write_text("x")
    (tmp_path / "secret.txt").write_text("secret")
    (root / "out").symlink_to(tmp_path / "secret.txt")
    (root / "in").symlink_to(root / "run" / "state.md")
    real = os.path.realpath(root)
    assert inside(real, "run/state.md") == str(root / "run" / "state.md")
    assert inside(real, "in") == str(root / "run" / "state.md")  # a link that stays inside is fine
    for bad in ("../secret.txt", "run/../../secret.txt", "/etc/passwd", "out"):
        with pytest.raises(Refused):
            inside(real, bad)


def test_targets_parse_as_ssh_and_git_read_them(tmp_path, monkeypatch):
    assert parse_remote("ssh://alice@build-1:2222/srv/proj") == RemoteSpec("build-1", "/srv/proj", "alice", 2222)
    assert parse_remote("ssh://build-1/~/proj") == RemoteSpec("build-1", "~/proj")
    assert parse_remote("build-1:proj/.prose") == RemoteSpec("build-1", "proj/.prose")
    assert parse_remote("bob@build-1:/srv") == RemoteSpec("build-1", "/srv", "bob")
    monkeypatch.chdir(tmp_path)
    for local in ("./a:b", "/srv/x", "runs", "dir/a:b", "postgresql://u@h/db"):
        assert parse_remote(local) is None
    (tmp_path / "odd:name").write_text("")
    assert parse_remote("odd:name") is None  # an existing local file wins
    for bad in ("ssh://-oProxyCommand=x/p", "ssh:///p", "ssh://h:99999/p"):
        with pytest.raises(ValueError):
            parse_remote(bad)
    argv = ssh_argv(RemoteSpec("h", "/p", "u", 22), {"PROSE_TUI_SSH_COMMAND": "ssh -F '/tmp/my config'"})
    assert argv[:6] == ["ssh", "-F", "/tmp/my config", "-p", "22", "-l"] and argv[7] == "h"


def _local_mirror(path: Path) -> Mirror:
    """The mirror with the reader as a local process started as ssh would start it on a host."""
    local_reader = [sys.executable, "-S", "-c", LOADER]
    return Mirror(RemoteSpec("localhost", str(path)), ssh_command=local_reader).start(timeout=60)


def test_the_reader_serves_what_is_below_its_path_and_nothing_else(tmp_path):
    served = tmp_path / "proj"
    run = served / ".prose" / "runs" / "20260301-100000-abcdef"
    run.mkdir(parents=True)
    (run / "vm.log.md").write_text(LOG)
    (served / ".prose" / ".env").write_text("OPENPROSE_POSTGRES_URL=postgresql://u:pw@h/db\n")
    (tmp_path / "secret.txt").write_text("secret")
    (run / "leak.md").symlink_to(tmp_path / "secret.txt")
    (served / "src").mkdir()
    (served / "src" / "main.py").write_text("print()")
    mirror = _local_mirror(served)
    try:
        copied = {str(p.relative_to(mirror.local)) for p in mirror.local.rglob("*") if p.is_file()}
        assert copied == {".prose/runs/20260301-100000-abcdef/vm.log.md"}  # no secret, no .env, no source tree
        assert oct(mirror.folder.stat().st_mode & 0o777) == "0o700"
        mirror.send({"op": "read", "path": "../secret.txt", "offset": 0, "length": 100})
        mirror.send({"op": "desire", "path": "../agent_state.json", "fields": {"desired_state": "stop"}})
        assert mirror.wait_for(lambda: mirror.desired, 30)
        assert mirror.desired[-1]["ok"] is False and "refused" in mirror.desired[-1]["message"]
        assert not (tmp_path / "agent_state.json").exists()
    finally:
        mirror.close()
    assert not mirror.folder.exists()  # the copy goes with the mirror


def test_an_append_sends_only_the_new_bytes_and_a_rewrite_the_file(tmp_path):
    run = tmp_path / "runs" / "20260301-100000-abcdef"
    run.mkdir(parents=True)
    log = run / "vm.log.md"
    log.write_text(LOG * 200)
    mirror = _local_mirror(tmp_path)
    try:
        copy = mirror.local / "runs" / "20260301-100000-abcdef" / "vm.log.md"
        before = mirror.bytes_in
        subprocess.run(["sh", "-c", f"printf '3→ ship ✓\\n' >> '{log}'"], check=True)  # a second process writes
        assert mirror.wait_for(lambda: copy.read_bytes() == log.read_bytes(), 30)
        assert mirror.bytes_in - before < 200  # the new line, not the 8 KB file
        log.write_text("# run:20260301-100000-abcdef other.prose\n")  # rewritten shorter, in place
        assert mirror.wait_for(lambda: copy.read_bytes() == log.read_bytes(), 30)
    finally:
        mirror.close()


def test_a_missing_path_is_said_plainly_and_leaves_nothing_behind(tmp_path, monkeypatch):
    import tempfile

    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    with pytest.raises(RemoteError, match="no such file or folder"):
        _local_mirror(tmp_path / "nope")
    assert list(private.iterdir()) == []  # the copy's folder went with the failed start


def test_the_program_sent_is_standard_library_only():
    # run isolated (-I -S: no PYTHONPATH, no site-packages, so no prose_tui): it must answer hello
    writer, reader = FrameWriter(), FrameReader()
    out = subprocess.run([sys.executable, "-S", "-I", "-c", LOADER], cwd="/",
                         input=reader_program() + writer.encode({"op": "hello", "root": "/nonexistent-xyz"}),
                         capture_output=True, timeout=60)
    [(message, _)] = reader.feed(out.stdout)
    assert message == {"op": "error", "message": "/nonexistent-xyz: no such file or folder"}


def test_polling_sees_an_append_where_inotify_is_not_used(tmp_path):
    run = tmp_path / "runs" / "20260301-100000-abcdef"
    run.mkdir(parents=True)
    log = run / "vm.log.md"
    log.write_text(LOG)
    mirror = Mirror(RemoteSpec("localhost", str(tmp_path)), ssh_command=[sys.executable, "-S", "-c", LOADER],
                    polling=True, poll=0.1).start(timeout=60)
    try:
        assert mirror.watch == "polling"
        copy = mirror.local / "runs" / "20260301-100000-abcdef" / "vm.log.md"
        subprocess.run(["sh", "-c", f"printf '3→ ship ✓\\n' >> '{log}'"], check=True)
        assert mirror.wait_for(lambda: copy.read_bytes() == log.read_bytes(), 30)
        (run / "bindings").mkdir()
        (run / "bindings" / "plan.md").write_text("# plan\n")  # a new folder and file are found too
        assert mirror.wait_for(lambda: (copy.parent / "bindings" / "plan.md").exists(), 30)
        log.unlink()
        assert mirror.wait_for(lambda: not copy.exists(), 30)  # and a removed file goes
    finally:
        mirror.close()


def test_a_copy_left_by_a_killed_explorer_is_removed_by_the_next(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    abandoned = tmp_path / "prose-tui-ssh-abandoned"
    (abandoned / "copy" / "srv").mkdir(parents=True)
    (abandoned / "pid").write_text(dead.stdout.strip())
    alive = tmp_path / "prose-tui-ssh-alive"
    alive.mkdir()
    (alive / "pid").write_text(str(os.getpid()))  # another explorer, still running
    served = tmp_path / "served"
    (served / "runs").mkdir(parents=True)
    mirror = Mirror(RemoteSpec("localhost", str(served)), ssh_command=[sys.executable, "-S", "-c", LOADER]).start(60)
    mirror.close()
    assert not abandoned.exists() and alive.exists()


def test_an_append_is_read_on_the_host_as_its_new_bytes_and_a_rewrite_whole(tmp_path):
    import io

    from prose_tui.remote.reader import Reader

    run = tmp_path / "runs" / "20260301-100000-abcdef"
    run.mkdir(parents=True)
    log = run / "vm.log.md"
    log.write_text("# run:20260301-100000-abcdef a.prose\n" + "".join(f"{i}→ step_{i} ✓\n" for i in range(60_000)))
    out = io.BytesIO()
    reader = Reader(-1, out)
    reader.hello({"root": str(tmp_path), "watch": "polling"})
    frames = FrameReader()
    assert [m["op"] for m, _ in frames.feed(out.getvalue())][-2:] == ["synced", "complete"]

    def changes() -> list[tuple[str, bytes]]:
        seen = len(out.getvalue())
        reader.scan(None)
        return [(m["op"], body) for m, body in frames.feed(out.getvalue()[seen:])]

    read = reader.bytes_read
    subprocess.run(["sh", "-c", f"printf '60000→ ship ✓\\n' >> '{log}'"], check=True)  # a second process appends
    assert changes() == [("append", "60000→ ship ✓\n".encode())]
    assert reader.bytes_read - read < 8192  # the head, the probe and the line: not the 1 MB log again
    with open(log, "r+b") as f:  # rewritten in place at its head (same inode), then grown
        f.write(b"# run:20260301-100000-abcdef b")
    subprocess.run(["sh", "-c", f"printf '60001→ more ✓\\n' >> '{log}'"], check=True)
    sent = changes()
    assert {op for op, _ in sent} == {"file"} and b"".join(body for _, body in sent) == log.read_bytes()
