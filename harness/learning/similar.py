"""Deduplication of distilled lessons by meaning.

Two lessons of the same kind and scope are one record when they mean the same thing:
"Keep prose plain and factual." and "Write without marketing language; dry wording." must
collapse, "Keep prose concise." must not collapse into either.

* `LexicalSimilarity` (deterministic, no dependency): each lesson becomes a set of concept
  tokens — lower-cased words, stop words dropped, a light suffix stemmer, and a synonym table
  mapping the words reviewers use for one idea to one token (salesy, marketing, flowery, hype
  -> `plain`; wordy, verbose, long-winded -> `concise`; ...). The score is the Jaccard index of
  the two sets; `threshold` (default 0.5) decides.
* `EmbeddingSimilarity` (the `embeddings` extra, `similarity = "embeddings"`): the cosine of
  all-MiniLM-L6-v2 sentence vectors, threshold 0.75. Measured on the bench's labelled pairs
  it does not separate paraphrases of short style lessons from different lessons (paraphrases
  scored 0.27-0.74, different lessons up to 0.75), so `auto` (the default) is lexical, or lexical *or* a cosine >= 0.85
  (`EitherSimilarity`) when the extra is installed.

`python -m bench corrections --json` measures both on a labelled set of paraphrase and
non-paraphrase pairs (precision and recall of "same meaning").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

__all__ = [
    "EitherSimilarity",
    "EmbeddingSimilarity",
    "LexicalSimilarity",
    "Similarity",
    "concepts",
]


def _w(words: str) -> list[str]:
    return words.split()


_STOP: Final = frozenset(
    _w(
        """a an the and or but of to in on at for with without by from as is are be been being
        it its this that these those please should must always never do does did not no any all
        some more less very too so than then into onto over under about keep use make write
        rather prefer instead only just also your their our we you they i me my can could would
        will reviewer reviewers asks asked wants want prose text wording words language avoid
        free description descriptions cell cells value values field fields entry entries
        content give leave out time times appear appears per one ones thing things way"""
    )
)
_SYNONYMS: Final[dict[str, str]] = {
    **dict.fromkeys(
        _w(
            """plain plainer plainly simple simpler simply dry drier factual fact matter sober
            neutral salesy sale sales pitch marketing markety promotional promo advert
            advertising flowery florid hype hyped hypey fluff fluffy purple brochure buzzword
            buzzwords superlative superlatives adjective adjectives gushing gush breathless spec
            sheet specsheet"""
        ),
        "plain",
    ),
    **dict.fromkeys(
        _w(
            """concise concisely short shorter brief briefer terse wordy verbose long winded
            longwinded rambling ramble padding padded waffle trim tight tighter succinct"""
        ),
        "concise",
    ),
    **dict.fromkeys(_w("detail detailed details elaborate expand thorough depth thin"), "detail"),
    **dict.fromkeys(_w("kilowatt kilowatts kw"), "kw"),
    **dict.fromkeys(_w("shorten shortened trimmed"), "concise"),
    **dict.fromkeys(
        _w("tbd tbc tba n/a placeholder placeholders blank blanks unknown"), "placeholder"
    ),
    **dict.fromkeys(_w("iso 8601 yyyy-mm-dd date dates"), "isodate"),
    **dict.fromkeys(_w("abbreviation abbreviations acronym acronyms spell"), "abbrev"),
    **dict.fromkeys(_w("passive active voice"), "voice"),
}
_UNIT_SPELLING: Final = re.compile(r"\bbtus?\s*(?:/\s*hr?|per\s+hour)\b")
_TOKEN: Final = re.compile(r"[a-z0-9°²³/.'-]+")


def _stem(word: str) -> str:
    for suffix in ("ingly", "edly", "ing", "ness", "ly", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def concepts(text: str) -> frozenset[str]:
    """The concept tokens of a lesson (see the module docstring)."""
    out: set[str] = set()
    text = _UNIT_SPELLING.sub("btu/h", text.lower())
    for raw in _TOKEN.findall(text.replace("-", " ")):
        word = raw.strip(".'")
        if not word or word in _STOP:
            continue
        out.add(_SYNONYMS.get(word) or _SYNONYMS.get(_stem(word)) or _stem(word))
    return frozenset(out)


class Similarity(Protocol):
    name: str
    threshold: float

    def score(self, a: str, b: str) -> float: ...

    def best(self, text: str, others: Sequence[str]) -> tuple[int, float]:
        """(index, score) of the most similar of `others`, (-1, 0.0) for none."""
        ...


class LexicalSimilarity:
    name = "lexical"

    def __init__(self, threshold: float = 0.5) -> None:
        self.threshold = threshold

    def score(self, a: str, b: str) -> float:
        ca, cb = concepts(a), concepts(b)
        if not ca or not cb:
            return 1.0 if a.strip().lower() == b.strip().lower() else 0.0
        return len(ca & cb) / len(ca | cb)

    def best(self, text: str, others: Sequence[str]) -> tuple[int, float]:
        scored = [(i, self.score(text, o)) for i, o in enumerate(others)]
        return max(scored, key=lambda x: x[1], default=(-1, 0.0))


class EmbeddingSimilarity:
    """Cosine similarity of sentence vectors from `encode` (a list of texts -> unit vectors,
    as rows of a numpy array)."""

    name = "embeddings"

    def __init__(self, encode: Callable[[list[str]], Any], threshold: float = 0.75) -> None:
        self.encode = encode
        self.threshold = threshold

    def score(self, a: str, b: str) -> float:
        return self.best(a, [b])[1]

    def best(self, text: str, others: Sequence[str]) -> tuple[int, float]:
        if not others:
            return (-1, 0.0)
        vecs = self.encode([text, *others])
        sims: Any = vecs[1:] @ vecs[0]
        i = int(sims.argmax())
        return (i, float(sims[i]))


class EitherSimilarity:
    """Same when the lexical similarity says so or the embeddings are very sure (cosine >=
    their threshold, 0.85 by default here): the `auto` choice when the extra is installed —
    embeddings can only add merges the lexical table missed, at a threshold no pair of
    different lessons reached in the bench."""

    name = "lexical+embeddings"
    threshold = 1.0  # scores are normalised: 1.0 means "same"

    def __init__(self, lexical: LexicalSimilarity, embeddings: EmbeddingSimilarity) -> None:
        self.lexical = lexical
        self.embeddings = embeddings

    def score(self, a: str, b: str) -> float:
        return self.best(a, [b])[1]

    def best(self, text: str, others: Sequence[str]) -> tuple[int, float]:
        if not others:
            return (-1, 0.0)
        i, lex = self.lexical.best(text, others)
        if lex >= self.lexical.threshold:
            return (i, 1.0)
        j, cos = self.embeddings.best(text, others)
        if cos >= self.embeddings.threshold:
            return (j, 1.0)
        return (i, min(lex / self.lexical.threshold, cos / self.embeddings.threshold) * 0.99)
