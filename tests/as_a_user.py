"""Run prose-tui's CLI with file permissions holding as for a user, also as root.

``python tests/as_a_user.py ARGS...`` drops the capabilities that read any file
(CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH) from the process's effective set, then runs
``prose_tui.cli.main:main`` with ``ARGS``: a mode-000 file or folder then fails with a
real ``EACCES`` from the kernel. Exits 77 when the capabilities cannot be dropped (tests skip).
A non-root user needs nothing dropped.
"""

from __future__ import annotations

import ctypes
import os
import sys

CANNOT_DROP = 77
_CAP_V3 = 0x20080522
_DAC = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_read_capabilities() -> bool:
    """Whether file permissions now hold for this process (always, when not root)."""
    if os.geteuid() != 0:
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        header, data = _CapHeader(_CAP_V3, 0), (_CapData * 2)()
        if libc.capget(ctypes.byref(header), data) != 0:
            return False
        data[0].effective &= ~_DAC
        return libc.capset(ctypes.byref(header), data) == 0
    except (OSError, AttributeError):
        return False


if __name__ == "__main__":
    if not drop_read_capabilities():
        sys.exit(CANNOT_DROP)
    from prose_tui.cli.main import main

    sys.argv = ["prose-tui", *sys.argv[1:]]
    sys.exit(main())
