"""The one normalisation every gate uses to match text to ontology entities.

`normalize(text)` ("standard", the default) is the key under which a cell, a label, an
alternative label, an alias and an IRI fragment are compared:

1. Unicode NFKC (compatibility forms fold: full-width letters, ligatures, `ﬁ` -> `fi`,
   non-breaking and other exotic spaces -> space, superscript digits -> digits);
2. trademark signs removed: ® ™ © ℠ (NFKC turns ™ and ℠ into "TM"/"SM", so they are removed
   before it);
3. casefold (Unicode case-insensitive: `Straße` == `STRASSE`);
4. whitespace collapsed to one space, stripped at both ends;
5. trailing punctuation removed (`Atorvastatin.`, `metformin;`); closing brackets and
   quotes that balance an opening one stay.

No fuzzy matching: accents, inner punctuation and word order matter (`ASHRAE 62.1` and
`ASHRAE-62.1` are different spellings). A pack that wants the loose rule sets
`[ontology] matching = "loose"`, which also strips accents and treats every run of
punctuation as a space (`normalize(text, "loose")`). The prose gate's word matcher splits
running text into words with `words(text)`, which is the loose form split on spaces: a
mention in prose is found by its words, a cell is resolved by its whole text.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Literal

__all__ = ["TRADEMARK_SIGNS", "Strictness", "normalize", "words"]

Strictness = Literal["standard", "loose"]

TRADEMARK_SIGNS = "®™©℠"
_SIGNS = str.maketrans("", "", TRADEMARK_SIGNS)
_SPACE = re.compile(r"\s+")
_TRAILING = re.compile(r"[\s.,;:!?…·\-–—]+$")
_LOOSE = re.compile(r"[^0-9a-z]+")


def normalize(text: str, strictness: Strictness = "standard") -> str:
    """The matching key of `text` (see the module docstring for the rule)."""
    text = unicodedata.normalize("NFKC", text.translate(_SIGNS)).casefold()
    if strictness == "loose":
        text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
        return _LOOSE.sub(" ", text).strip()
    text = _SPACE.sub(" ", text).strip()
    return _TRAILING.sub("", text)


def words(text: str) -> list[str]:
    """The loose form's words: how the prose matcher reads labels and running text."""
    return normalize(text, "loose").split()
