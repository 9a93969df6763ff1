"""The effector protocols, re-exported from the kernel's ports (`harness.ports`) for
effector and plugin authors: a gate implements `Gate`, a proposer `Proposer`; `run_gate`
is the one boundary where a gate crash becomes data."""

from __future__ import annotations

from harness.ports import Committer, Critic, Gate, Proposer, run_gate

__all__ = ["Committer", "Critic", "Gate", "Proposer", "run_gate"]
