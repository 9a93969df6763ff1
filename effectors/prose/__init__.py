"""The prose gate's parts: entity matching, value claims, length, truncation, entailment.

`effectors.prose_gate.ProseGate` puts them together.

`claims`, `matcher`, `text` and `length` may run compiled: `scripts/build_accel.py` (run by
`make`) builds them with mypyc under `build/accel/`, and they are used while every source
has the hash the build recorded (see `effectors.prose.accel`)."""

from effectors.prose.accel import install as _install

ACCELERATED = _install(__path__)
