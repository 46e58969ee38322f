"""The benchmark table still runs: ``benchmarks/run_all.py --quick`` exits 0 and prints every row.

Tiny sizes, short waits, one run of every case in one process; no timing is asserted (figures
live in docs/performance.md).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))


def test_run_all_quick_prints_every_row():
    import run_all

    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "run_all.py"), "--quick"],
                          capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    params = dict(run_all.QUICK, half=run_all.QUICK["events"] // 2)
    for _key, figure, _target_text, _target, _unit in run_all.ROWS:
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(figure.format(**params))), None)
        assert line is not None, f"row missing: {figure.format(**params)}\n{proc.stdout}"
        assert "n/a" not in line.split()[-1:], f"row without a figure: {line}"
    assert "machine:" in proc.stdout and "load average" in proc.stdout
