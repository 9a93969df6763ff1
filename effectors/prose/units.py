"""Units written as symbols ("12.5%", "12.5 %", "21 °C"): the entity matcher scans words, so
a unit with no letter or digit at its start is never one of its cue hits. These units are
found by a regex of their own, right after a number. Which symbols a pack may declare is
`harness.pack.UNIT_SYMBOLS` (and "°"-units); any other is refused when the pack loads."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from effectors.prose.matcher import words_of
from harness.errors import PackError
from harness.pack import Pack
from harness.pools import normalize_label

__all__ = ["check_words", "is_symbol_unit", "symbol_unit", "symbol_units_regex"]


def is_symbol_unit(unit: str) -> bool:
    """Does the unit start with no letter or digit (so no word scan finds it)?"""
    return not unicodedata.normalize("NFKC", unit.strip())[:1].isalnum()


def symbol_units_regex(units: Sequence[str]) -> re.Pattern[str] | None:
    """A number, at most one space, then one of `units` (group 1), ending there: not
    "100%-recycled", not the digits of a key ("R-12%")."""
    if not units:
        return None
    alts = "|".join(re.escape(u) for u in sorted(units, key=lambda u: (-len(u), u)))
    return re.compile(
        r"(?<![\w.])(?<![^\W\d_]-)\d+(?:,\d{3})*(?:\.\d+)?[ \u00a0]?(" + alts + r")(?![\w\-%])",
        re.IGNORECASE,
    )


def symbol_unit(match: re.Match[str]) -> str:
    """The unit a `symbol_units_regex` match found, case-folded ("°c" and "°C" alike)."""
    return match.group(1).casefold()


def check_words(pack: Pack) -> None:
    """Every unit, prefix and phrase of `[[prose.quantities]]` is one the matcher can find:
    its words as the prose scan reads them are the words it is looked up by, and no two
    units of one quantity read alike with different factors ("µg" and "g"). Else a
    `PackError` naming pack.toml and the key."""
    for i, q in enumerate(pack.config.prose.quantities):
        seen: dict[str, tuple[str, float]] = {}
        words: list[tuple[str, str]] = [
            *(("units", u) for u in q.units if not is_symbol_unit(u)),
            *(("prefixes", p) for p in q.prefixes),
            *(("phrases", p) for p in q.phrases),
        ]
        for key, word in words:
            looked_up = " ".join(normalize_label(word).split())
            scanned = " ".join(w for w, _, _ in words_of(word))
            problem = None
            kept = sum(c.isalnum() for c in unicodedata.normalize("NFKC", word))
            if not looked_up:
                problem = f"{word!r} has no letter or digit the prose scan reads"
            elif kept != len(looked_up.replace(" ", "")):
                problem = (f"{word!r} is matched as {looked_up!r}: the scan drops some of its "
                           "characters, so other words would match it too")
            elif key == "units" and words_of(word)[0][1] != 0:
                problem = f"{word!r} does not start with a letter or digit the scan reads"
            elif looked_up != scanned:
                problem = (f"{word!r} is read in prose as {scanned!r} but looked up as "
                           f"{looked_up!r}, so it would match nothing")
            elif key == "units":
                other = seen.setdefault(looked_up, (word, q.units[word]))
                if other[1] != q.units[word]:
                    problem = (f"units {other[0]!r} and {word!r} read alike ({looked_up!r}) "
                               "with different factors")
            if problem:
                raise PackError(
                    f"[[prose.quantities]] #{i + 1} ({q.column}): `prose.quantities.{i}.{key}`: "
                    + problem,
                    file=pack.root / "pack.toml",
                    hint="write it with plain letters, digits and spaces ('L/h' for 'L·h', 'ug' for 'µg')",
                )
