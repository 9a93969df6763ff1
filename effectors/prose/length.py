"""Prose length against the word counts of the pack's reference samples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["LengthBand", "percentile", "word_count"]


_OTHER_ASCII_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"  # what `str.split` splits on, but " "


def word_count(text: str) -> int:
    """`len(text.split())`, without building the words when the only white space is single
    spaces (ASCII text without tabs, newlines or the other separators)."""
    if text.isascii() and not any(c in text for c in _OTHER_ASCII_SPACE) and "  " not in text:
        if not text:
            return 0
        return text.count(" ") + 1 - text.startswith(" ") - text.endswith(" ")
    return len(text.split())


def percentile(sorted_values: Sequence[int], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 1]."""
    if not sorted_values:
        raise ValueError("no values")
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


@dataclass(frozen=True)
class LengthBand:
    """Admissible word counts: the `band` percentiles of the references' word counts."""

    low: float
    high: float
    band: tuple[float, float]
    samples: int

    @classmethod
    def from_references(cls, texts: Sequence[str], band: tuple[float, float]
                        ) -> LengthBand | None:
        counts = sorted(word_count(t) for t in texts)
        if not counts:
            return None
        return cls(percentile(counts, band[0]), percentile(counts, band[1]), band, len(counts))

    def admits(self, words: int) -> bool:
        return self.low <= words <= self.high

    def describe(self) -> str:
        lo, hi = self.band
        return (f"{self.low:g}-{self.high:g} words (percentiles {lo:g}-{hi:g} of "
                f"{self.samples} reference samples)")
