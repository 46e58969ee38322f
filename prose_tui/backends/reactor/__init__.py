"""Reactor state dirs (openprose-0.15 reactor.md, concepts/reactor.md): ``receipts.json``,
``compile/topology.json`` and ``world-models/<hex(node)>/`` read as one run.

Modules by responsibility: :mod:`.layout` (which paths are a state dir, ``reactor.yml``),
:mod:`.topology` (nodes, edges, order), :mod:`.ledger` (the receipt array, content hashes,
chain verification, tail parsing), :mod:`.frames` (``OPWM1`` world-model versions),
:mod:`.assemble` (the run model), :mod:`.backend` (the protocol).
"""
