"""SOPS-encrypted run files (FORMATS.md, Dialects: "Whole runs encrypted with SOPS").

A SOPS file is JSON (or YAML) whose values are ``ENC[AES256_GCM,...]`` with a ``sops``
metadata key. Such a file is reported as encrypted; its ciphertext is never shown.
"""

from __future__ import annotations

import re

_ENC = re.compile(r"ENC\[(?:AES256_GCM|[A-Z0-9_]+),data:")
_SOPS_KEY = re.compile(r"""["']?sops["']?\s*:""")


def looks_encrypted(head: str) -> bool:
    """True when the first bytes of a file are a SOPS document."""
    return bool(_ENC.search(head)) and bool(_SOPS_KEY.search(head) or head.lstrip().startswith(("{", "data:")))
