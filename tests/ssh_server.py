"""A real OpenSSH server on 127.0.0.1 for the remote-run tests and benchmarks (issue 34).

:func:`start_sshd` starts Debian's ``/usr/sbin/sshd`` in the foreground on a port held for it
until :meth:`SshServer.stop` (``ports.PortHold``: no other test process can take it, not even
while :meth:`SshServer.pause` has it stopped) with a throwaway host key, a throwaway user key
allowed through an ``AuthorizedKeysFile`` in a temporary folder, and an ``ssh_config`` that
uses them (``BatchMode yes``, known hosts in the folder). :attr:`SshServer.command` is the
``PROSE_TUI_SSH_COMMAND`` that reaches it: ``ssh -F <folder>/ssh_config``, host ``testhost``.
:func:`sshd_missing` says why it cannot run here (no sshd, no ssh, no ssh-keygen), for a
visible skip.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from ports import PortHold, startup_lost_port

SSHD = "/usr/sbin/sshd"
HOST = "testhost"


def sshd_missing() -> str | None:
    """Why no test sshd can be started here, or ``None``."""
    if not os.path.exists(SSHD):
        return f"{SSHD} is not installed (apt-get install openssh-server)"
    for tool in ("ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install openssh-client)"
    return None


STARTS = 5  # tries on a fresh port when a foreign program took the held one (see ports.py)


@dataclass
class SshServer:
    folder: Path
    hold: PortHold
    process: subprocess.Popen
    extra: dict = field(default_factory=dict)

    @property
    def port(self) -> int:
        return self.hold.port

    @property
    def config(self) -> Path:
        return self.folder / "ssh_config"

    @property
    def command(self) -> str:
        return f"ssh -F {self.config}"

    def target(self, path: Path | str) -> str:
        return f"ssh://{HOST}{path}"

    def pause(self) -> None:
        """Stop listening (logins fail; sessions already open go on)."""
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=120)  # a hang guard: sshd ends at once on SIGTERM

    def resume(self) -> None:
        """Listen again on the same port with the same keys."""
        self.process = _launch(self.folder)
        _wait_for_login(self)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.hold.release()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_sshd(*, force_command: str | None = None, set_env_path: str | None = None) -> SshServer:
    """Start sshd on a free port of 127.0.0.1 and wait until it accepts a login.
    ``force_command``: sshd's ``ForceCommand`` (the remote command every login runs);
    ``set_env_path``: ``PATH`` for the session (``SetEnv``), e.g. one without python3."""
    folder = Path(tempfile.mkdtemp(prefix="prose-tui-sshd-"))
    os.chmod(folder, 0o700)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    shutil.copy(folder / "user_key.pub", folder / "authorized_keys")
    Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation folder (Debian's packaging makes it at boot)
    for tries_left in reversed(range(STARTS)):
        hold = PortHold()
        _configure(folder, hold.port, force_command=force_command, set_env_path=set_env_path)
        server = SshServer(folder, hold, _launch(folder))
        try:
            _wait_for_login(server)
            return server
        except RuntimeError as exc:
            if tries_left and startup_lost_port(str(exc)):
                server.process.wait()
                hold.release()
                continue
            server.stop()
            raise
    raise AssertionError("unreachable")


def _configure(folder: Path, port: int, *, force_command: str | None, set_env_path: str | None) -> None:
    lines = [f"Port {port}", "ListenAddress 127.0.0.1", f"HostKey {folder / 'host_key'}",
             f"AuthorizedKeysFile {folder / 'authorized_keys'}", "StrictModes no", "UsePAM no",
             "PasswordAuthentication no", "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password",
             f"PidFile {folder / 'sshd.pid'}", "LogLevel ERROR", "AcceptEnv none", "PrintMotd no"]
    if force_command:
        lines.append(f"ForceCommand {force_command}")
    if set_env_path:
        lines.append(f"SetEnv PATH={set_env_path}")
    (folder / "sshd_config").write_text("\n".join(lines) + "\n")
    (folder / "ssh_config").write_text("\n".join([
        f"Host {HOST}", "  HostName 127.0.0.1", f"  Port {port}", f"  User {getpass.getuser()}",
        f"  IdentityFile {folder / 'user_key'}", "  IdentitiesOnly yes", "  BatchMode yes",
        f"  UserKnownHostsFile {folder / 'known_hosts'}", "  StrictHostKeyChecking accept-new",
        "  LogLevel ERROR"]) + "\n")


def _launch(folder: Path) -> subprocess.Popen:
    return subprocess.Popen([SSHD, "-D", "-e", "-f", str(folder / "sshd_config")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _wait_for_login(server: SshServer) -> None:
    process = server.process
    deadline = time.monotonic() + 300  # a guard against a hang, not a timing: a loaded machine may take long
    while True:  # until it accepts a login
        if process.poll() is not None:
            err = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"sshd exited: {err.strip()}")
        # ConnectTimeout bounds the banner exchange too: a foreign listener that took the port
        # (see ports.py) accepts the connection and never answers; sshd's exit then says why.
        probe = subprocess.run(["ssh", "-F", str(server.config), "-o", "ConnectTimeout=10", HOST, "true"],
                               capture_output=True)
        if probe.returncode == 0:
            return
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    raise RuntimeError(f"sshd on port {server.port} never accepted a login: {probe.stderr.decode().strip()}")


def gate_command(server: SshServer, budget: int, fifo: Path) -> str:
    """A ``PROSE_TUI_SSH_COMMAND`` for ``server`` through :func:`gate`: the first ``budget``
    bytes from the server pass, the rest waits until ``fifo`` (made here) is opened for writing."""
    import shlex
    import sys

    os.mkfifo(fifo)
    proxy = f"{sys.executable} {Path(__file__).resolve()} gate %h %p {budget} {fifo}"
    return f"{server.command} -o {shlex.quote('ProxyCommand=' + proxy)}"


def gate(host: str, port: int, budget: int, fifo: str) -> None:
    """An ssh ``ProxyCommand``: stdin/stdout <-> host:port; from the server, ``budget`` bytes
    pass, then nothing until ``fifo`` is opened for writing (a link that stalls mid-copy, for
    as long as a test wants, with no clock involved)."""
    import threading

    sock = socket.create_connection((host, port))

    def up() -> None:
        while data := os.read(0, 65536):
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)

    threading.Thread(target=up, daemon=True).start()
    passed = 0
    while data := sock.recv(min(65536, budget - passed) if passed < budget else 65536):
        if passed >= budget:
            with open(fifo, "rb"):  # blocks until the test opens the other end
                pass
            passed = -(1 << 62)  # open from now on
        os.write(1, data)
        passed += len(data)


if __name__ == "__main__":
    import sys

    if sys.argv[1] == "gate":
        gate(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
