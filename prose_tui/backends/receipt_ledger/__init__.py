"""Per-statement receipt ledgers (FORMATS.md generation 8, a public OpenProse fork, July 2026).

A run folder (``.libretto/runs/{id}/`` or any ``runs/{id}/``) holds ``receipts.jsonl``, one
hash-chained receipt per completed statement (contract ``openprose.receipt.v1`` /
``libretto.receipt.v1``), ``run.json`` anchoring the ledger's ``receipt_count`` and
``ledger_head``, and usually ``state.md`` (``# Run State — {id}``, bold fields, statement ids
``s001…``) and ``bindings/``. The receipts are the run's history; the chain is verified as
the ledger is read (:mod:`.ledger`). This package imports only ``backends.common`` and the model.
"""
