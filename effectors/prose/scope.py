"""What a mention means in its sentence: asserted or not (negation, contrast, history, scope),
and short references to an entity of the tables ("the chiller").

* `not_asserted`: a mention is not a claim that the entity is there when its clause says so
  before it ("there is no MRI scanner", "unlike a CT scanner", "replaced the old boiler",
  "without a UPS") or right after it ("the boiler ... was removed", "... is outside the scope
  of this register"). The clause is the text since the last ";", ":", "(" or line break (at
  most 80 characters back) and, after the mention, up to the next of those or the sentence's
  end. Limits: the cue words are English; a negation that reaches further ("I don't think
  the survey found a UPS") or a double negation is not read, so such a mention counts as
  asserted (the gate then errs towards a critique the proposer can answer by rewording).
* `Heads`: "the chiller" names the one entity of the artifact whose preferred label ends in
  "chiller" ("water-cooled chiller"), and "the ultrasound" the one whose label is
  "ultrasound" and a generic word ("ultrasound system"); read only after "the", "this" or
  "that", never for a head two entities of the artifact share, nor for a generic word alone
  ("the unit", "the system"). It only ever
  names an entity the tables hold, so it can satisfy coverage or anchor a claim but never
  raise `prose.unknown_entity`.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence

from effectors.prose.text import lower
from harness.pools import normalize_label

__all__ = ["Heads", "not_asserted"]


def _finds(low: str, head: str, regex: re.Pattern[str] | None) -> list[tuple[int, int]]:
    """Spans of `head` (found by `regex` when it has several words, any separators between
    them) after "the ", "this " or "that " in lower-cased text, on word boundaries (a literal
    first: far faster than a regex that starts with the determiners)."""
    if regex is not None:
        spans = [m.span() for m in regex.finditer(low)]
    else:
        spans = []
        at = low.find(head)
        while at >= 0:
            spans.append((at, at + len(head)))
            at = low.find(head, at + len(head))
    out: list[tuple[int, int]] = []
    n = len(low)
    for at, end in spans:
        if at < 4 or low[at - 1] != " " or (end < n and (low[end].isalnum() or low[end] in "-/_")):
            continue
        before = low[max(0, at - 6) : at - 1]  # the word before, and a character before it
        for det in ("the", "this", "that"):
            if before.endswith(det) and not before[-len(det) - 1 : -len(det)].isalnum():
                out.append((at, end))
                break
    return out


# "the ", "this " or "that " after no letter or digit (a look-behind after the literal "th":
# re's fast scan for a literal first), and the run of word characters, "-" and "/" after it
_DETERMINER = re.compile(r"th(?<![^\W_]th)(?:e|is|at) (?=([\w/-]*))")
_WORD_RUN = re.compile(r"[\w/-]*")  # what may not follow a head (`_finds`): \w, "-", "/"


_BEFORE = re.compile(
    r"\b(?:no|not|never|without|unlike|except|excluding|instead\s+of|rather\s+than|"
    r"other\s+than|replac(?:e|ed|es|ing)|remov(?:e|ed|es|ing)|decommission(?:ed|ing)?|"
    r"former(?:ly)?|old|previous(?:ly)?|disused|no\s+longer|nor|neither|n't)\b",
    re.IGNORECASE,
)
_AFTER = re.compile(
    r"^[^;:(),\n]{0,60}?\b(?:was|were|is|are|has\s+been|have\s+been|had\s+been)\s+"
    r"(?:no\s+longer|removed|replaced|decommissioned|scrapped|disconnected|"
    r"outside\s+(?:the\s+)?scope|out\s+of\s+scope|excluded|not\s+part\s+of|"
    r"not\s+included|not\s+covered)",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[;:(\n]|\bbut\b|\bwhile\b|\bwhereas\b", re.IGNORECASE)
_GENERIC = frozenset(
    {
        "unit",
        "units",
        "system",
        "set",
        "box",
        "room",
        "area",
        "test",
        "check",
        "panel",
        "department",
        "service",
        "survey",
        "standard",
        "code",
        "machine",
        "equipment",
        "suite",
        "deck",
        "ward",
        "plant",
        "supply",
        "power",
        "type",
    }
)


def not_asserted(text: str, start: int, end: int, sentence: tuple[int, int]) -> bool:
    """Does the clause around the mention text[start:end] negate it, contrast it with what
    is there, put it in the past, or put it out of scope?"""
    lo = max(sentence[0], start - 80)
    before = text[lo:start]
    cuts = [m.end() for m in _CLAUSE.finditer(before)]
    if cuts:
        before = before[cuts[-1] :]
    if _BEFORE.search(before):
        return True
    after = text[end : min(sentence[1], end + 120)]
    return _AFTER.match(after) is not None


def _after_determiners(low: str, heads: Mapping[str, str]) -> list[tuple[int, int, str]]:
    """(start, end, value) of what `_finds` finds for each of `heads` (head -> its value),
    heads of one word made of word characters, "-" and "/" (`Heads._runs`), in text order,
    from one scan for the determiners: such a head, ending where no such character follows,
    is the whole run of them after "the ", "this " or "that "."""
    if not heads:
        return []
    out: list[tuple[int, int, str]] = []
    for m in _DETERMINER.finditer(low):
        value = heads.get(m.group(1))
        if value is not None:
            out.append((m.end(), m.end(1), value))
    return out


class Heads:
    """Head words of preferred labels ("chiller" of "water-cooled chiller") -> individuals."""

    def __init__(self, labels: Mapping[str, str]) -> None:
        """`labels`: individual -> its preferred label."""
        self.by_head: dict[str, set[str]] = {}
        self.head_of: dict[str, str] = {}
        for ind, label in labels.items():
            words = normalize_label(label).split()
            if len(words) < 2 or not words[-1].isalpha():
                continue
            # "the chiller" for "water-cooled chiller"; "the ultrasound" for "ultrasound
            # system" (a generic last word: the words before it)
            head = " ".join(words[:-1]) if words[-1] in _GENERIC else words[-1]
            if len(head) >= 4 and head not in _GENERIC:
                self.by_head.setdefault(head, set()).add(ind)
                self.head_of[ind] = head
        self._regex: dict[str, re.Pattern[str]] = {}
        # the heads `_after_determiners` finds (one word of word characters, "-" and "/")
        self._runs = frozenset(
            h for h in self.by_head if " " not in h and _WORD_RUN.fullmatch(h))

    def _finder(self, head: str) -> re.Pattern[str] | None:
        """The regex of a head of several words (any separators); None for one word."""
        if " " not in head:
            return None
        regex = self._regex.get(head)
        if regex is None:
            words = r"[\s-]+".join(map(re.escape, head.split()))
            regex = self._regex[head] = re.compile(words)  # a literal first: a fast scan
        return regex

    def find(
        self,
        text: str,
        view: Iterable[str],
        taken: Sequence[tuple[int, int] | tuple[int, int, str, bool]],
        named: set[str] | frozenset[str] = frozenset(),
    ) -> list[tuple[int, int, str]]:
        """(start, end, individual) of each "the <head>" naming the one entity of `view`
        with that head, outside the spans already `taken` (sorted, non-overlapping: each
        (start, end, ...), such as the mentions' anchors). A head
        of several words ("the ultrasound" ... "the fan coil") is looked for only for an
        entity not `named` otherwise (a regex scan each: they are rare as short forms)."""
        heads: dict[str, str] = {}
        shared: set[str] = set()
        for ind in view:
            head = self.head_of.get(ind)
            if head is not None:
                if head in heads:
                    shared.add(head)
                heads[head] = ind
        for head in shared:
            del heads[head]
        if not heads:
            return []
        low = lower(text)
        runs = self._runs
        one_word = {head: ind for head, ind in heads.items() if head in runs}
        found = _after_determiners(low, one_word)
        for head, ind in heads.items():
            if head in one_word or (" " in head and ind in named):
                continue
            found += [(s, e, ind) for s, e in _finds(low, head, self._finder(head))]
        taken_starts = [t[0] for t in taken]
        out: list[tuple[int, int, str]] = []
        for s, e, ind in found:
            i = bisect_right(taken_starts, s) - 1
            if (i >= 0 and taken[i][1] > s) or (i + 1 < len(taken) and taken[i + 1][0] < e):
                continue
            out.append((s, e, ind))
        out.sort()
        return out
