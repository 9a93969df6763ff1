"""The prose gate's parts: entity matching, value claims, length, truncation, entailment.

`effectors.prose_gate.ProseGate` puts them together."""
