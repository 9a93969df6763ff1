"""The prose gate's parts: entity matching, value claims, length, truncation, entailment.

`effectors.prose_gate.ProseGate` puts them together. The hot modules may run compiled
(`effectors.prose._native`: `make native`, `MEMBRANE_NATIVE=0` for the sources)."""

from effectors.prose._native import guard

guard()
