"""How a stated quantity reads: number words, and what the words before a number make of it.

* `numeric_view`: the text with every number written in words ("sixty", "one hundred and
  thirty", "twenty-five", "sixth") replaced by its digits ("60", "130", "25", "6th"),
  right-aligned in the same span, so every offset still points into the original text.
  Number words are read by `text2num` (a maintained Rust parser of number words in several
  languages, with their spans): growing regexes for compound numbers is what the issue
  warned against, and `word2number`/`numerizer` give no spans.
* `Reading`: a claimed value as an interval: an equality ("48 kW"), an approximation
  ("about 48 kW", judged with at least `APPROXIMATE` relative tolerance), an upper bound
  ("under 10 kW", "no more than", "up to"), a lower bound ("above 250 kW", "at least") or a
  range ("between 40 and 60 kW", "40-60 kW", "from 3 to 12 months").
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from text_to_num import find_numbers  # type: ignore[import-untyped]

__all__ = ["APPROXIMATE", "Reading", "numeric_view", "qualifier"]

APPROXIMATE = 0.1  # "about 48 kW" holds for a cell within 10%

# the look-ahead (the words' first letters) spares trying the alternation at most positions:
# 5x faster, the same matches
_NUMBER_WORD = re.compile(
    r"(?=[efhnost])\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
    r"thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|"
    r"fifty|sixty|seventy|eighty|ninety|hundred|thousand|first|second|third|fourth|fifth|"
    r"sixth|seventh|eighth|ninth|tenth|eleventh|twelfth)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"\w+|[^\w\s]")


class _Token:
    __slots__ = ("end", "start", "word")

    def __init__(self, word: str, start: int, end: int) -> None:
        self.word, self.start, self.end = word, start, end

    def text(self) -> str:
        return self.word

    def nt_separated(self, previous: _Token) -> bool:
        return "\n" in previous.word

    def not_a_number_part(self) -> bool:
        return False


def numeric_view(text: str) -> tuple[str, dict[int, int]]:
    """`text` with its number words as digits, offsets kept (the text itself when it has
    none, or when a number's digits would not fit in its words), and where each number put
    in starts -> where its words start."""
    if _NUMBER_WORD.search(text) is None:
        return text, {}
    tokens = [_Token(m.group(), m.start(), m.end()) for m in _WORD.finditer(text)]
    out = list(text)
    moved: dict[int, int] = {}
    for occ in find_numbers(tokens, "en", 0):
        start, end = tokens[occ.start].start, tokens[occ.end - 1].end
        digits = occ.text
        if len(digits) > end - start or not any(c.isalpha() for c in text[start:end]):
            continue
        out[start:end] = " " * (end - start - len(digits)) + digits
        moved[end - len(digits)] = start
    return ("".join(out) if moved else text), moved


class Tolerance(float):
    """A relative tolerance (the float itself) with an absolute part in the column's unit
    (`[[prose.quantities]] abs_tolerance`, issue 27), which `Reading.holds` adds."""

    absolute: float

    def __new__(cls, relative: float, absolute: float = 0.0) -> Tolerance:
        out = super().__new__(cls, relative)
        out.absolute = absolute
        return out


class Reading(NamedTuple):
    """A claimed value: the interval [low, high] and the tolerance it is judged with."""

    low: float
    high: float
    approximate: bool = False

    def holds(self, held: float, tolerance: float, absolute: float | None = None) -> bool:
        """Does a cell of value `held` satisfy the claim? An equality within the relative
        tolerance of the cell plus the absolute one (`absolute`, else a `Tolerance`'s own;
        the cell is never rounded to the claim); a bound or range with the bound itself
        widened by both."""
        if absolute is None:
            absolute = tolerance.absolute if isinstance(tolerance, Tolerance) else 0.0
        if self.approximate:
            tolerance = max(tolerance, APPROXIMATE)
        if self.low == self.high:
            return abs(self.low - held) <= tolerance * abs(held) + absolute + 1e-9
        low = (self.low - tolerance * abs(self.low) - absolute
               if math.isfinite(self.low) else self.low)
        high = (self.high + tolerance * abs(self.high) + absolute
                if math.isfinite(self.high) else self.high)
        return low - 1e-9 <= held <= high + 1e-9


_QUALIFIER = re.compile(
    r"(?:\b(?P<le>under|below|less\s+than|fewer\s+than|no\s+more\s+than|not\s+more\s+than|"
    r"at\s+most|up\s+to|a\s+maximum\s+of|maximum|max\.?)|"
    r"\b(?P<ge>over|above|more\s+than|greater\s+than|at\s+least|no\s+less\s+than|"
    r"not\s+less\s+than|in\s+excess\s+of|exceeding|a\s+minimum\s+of|minimum|min\.?)|"
    r"\b(?P<approx>about|around|approximately|approx\.?|roughly|nearly|almost|some|circa|"
    r"c\.|~)|"
    r"(?:\b(?P<between>between|from)\s+)?(?P<low>-?\d+(?:\.\d+)?)\s*(?:and|to|-|–|—)"
    r")\s*$",
    re.IGNORECASE,
)


_DIGITS = tuple("0123456789")
# the last word of every qualifier above -> what must come before it (empty: nothing)
_LAST_WORDS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        (
            "under",
            "below",
            "than",
            "most",
            "maximum",
            "max",
            "max.",
            "over",
            "above",
            "least",
            "exceeding",
            "minimum",
            "min",
            "min.",
            "about",
            "around",
            "approximately",
            "approx",
            "approx.",
            "roughly",
            "nearly",
            "almost",
            "some",
            "circa",
            "c.",
        ),
        (),
    ),
    "to": ("up", *_DIGITS),
    "of": ("maximum", "minimum", "excess"),
    "and": _DIGITS,
}


def qualifier(before: str, value: float, factor: float) -> Reading | None:
    """The reading of a number `value` (already times `factor`, the unit's) from the words
    right before it (`before`, the text up to the number); None: the words make it no claim
    the gate can judge ("between 40 kW" with no end)."""
    tail = before[-40:].rstrip()
    last = tail[tail.rfind(" ") + 1 :].lower()
    if last in _LAST_WORDS:
        need = _LAST_WORDS[last]
        if need and not tail[: len(tail) - len(last)].rstrip()[-12:].lower().endswith(need):
            return Reading(value, value)  # "a rating of 48 kW", "rated to 48 kW"
    elif not tail.endswith(("-", "–", "—", "~")):
        return Reading(value, value)  # the common case, without the regex
    tail = numeric_view(tail)[0]  # "between forty and sixty"
    m = _QUALIFIER.search(tail + " ")
    if m is None:
        return Reading(value, value)
    if m.group("le"):
        return Reading(-math.inf, value)
    if m.group("ge"):
        return Reading(value, math.inf)
    if m.group("approx"):
        return Reading(value, value, approximate=True)
    low = float(m.group("low")) * factor
    if m.group("between") is None and not re.search(r"(?:to|–|—|-)\s*$", before):
        return None  # "40 and 60 kW" without "between": two claims, not a range
    return Reading(min(low, value), max(low, value))
