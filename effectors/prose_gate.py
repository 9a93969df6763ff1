"""PROSE_GATE: the prose must talk about the artifact's entities, and only about them.

Checks (codes are stable API):

* `prose.unknown_entity`  a pool individual is mentioned that no object cell of the artifact
                          names (the prose talks about something the tables do not hold)
* `prose.missing_entity`  a key entity (a value of a `[prose] entity_columns` cell) is never
                          mentioned, and coverage is below `[prose] min_coverage`
* `prose.truncated`       the prose stops mid-thought: no terminal punctuation, a trailing
                          ellipsis or connector word, or unbalanced brackets/quotes

Mentions are found by one `EntityMatcher` per gate: a word trie over every individual's
labels and IRI fragment (`_` read as a space), normalised like `harness.pools.normalize_label`,
matched on whole words, longest match first, mapped back to character spans of the prose.
Prose critiques reject no cells.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from harness.models import Artifact, Critique, Location, Verdict
from harness.pack import Pack
from harness.pools import Pools, normalize_label

__all__ = ["EntityMatcher", "Mention", "ProseGate", "key_entities", "truncation_rules", "view_of"]

_TOKEN = re.compile(r"[^\W_]+")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]”’]*\s+")
_TERMINAL = re.compile(r"[.!?][\"')\]”’»]*$")
CONNECTORS = frozenset({
    "and", "or", "the", "a", "an", "with", "of", "to", "for", "by", "from", "in", "into",
    "but", "nor", "than", "that", "which", "whose", "as", "at", "including", "such", "via",
    "versus", "plus",
})
# Connectors that make even a sentence ending in "." look cut off ("... fitted with.").
_HARD_CONNECTORS = frozenset(
    {"and", "or", "the", "a", "an", "with", "of", "nor", "than", "versus", "plus"}
)
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("“", "”"))


@dataclass(frozen=True)
class Mention:
    """One mention of an individual: its IRI fragment and the span in the original text."""

    individual: str
    start: int
    end: int


class _Node:
    __slots__ = ("children", "individual")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.individual: str | None = None


class EntityMatcher:
    """Finds mentions of pool individuals in text; built once per pools, then reused."""

    def __init__(self, pools: Pools) -> None:
        self._root = _Node()
        self.depth = 0
        for name in sorted(pools.individuals):
            info = pools.individuals[name]
            for text in (*info.labels, name.replace("_", " ")):
                words = normalize_label(text).split()
                if words:
                    self._add(words, name)

    def _add(self, words: list[str], individual: str) -> None:
        node = self._root
        for w in words:
            node = node.children.setdefault(w, _Node())
        if node.individual is None:  # first (sorted) individual wins an ambiguous phrase
            node.individual = individual
        self.depth = max(self.depth, len(words))

    @staticmethod
    def _words(text: str) -> list[tuple[str, int, int]]:
        """Normalised words of `text` with the character span of the token each came from."""
        out: list[tuple[str, int, int]] = []
        for m in _TOKEN.finditer(text):
            for w in normalize_label(m.group()).split():
                out.append((w, m.start(), m.end()))
        return out

    @staticmethod
    def _step(node: _Node, word: str) -> _Node | None:
        nxt = node.children.get(word)
        if nxt is None and len(word) > 3 and word.endswith("s"):
            plural = node.children.get(word[:-1])  # "CT scanners" is a mention of "CT scanner"
            if plural is not None and plural.individual is not None:
                return plural
        return nxt

    def find(self, text: str) -> list[Mention]:
        """Every mention, left to right, longest match first, never overlapping."""
        words = self._words(text)
        mentions: list[Mention] = []
        i = 0
        while i < len(words):
            node: _Node | None = self._root
            best: tuple[int, str] | None = None
            j = i
            while j < len(words) and j - i < self.depth and node is not None:
                node = self._step(node, words[j][0])
                if node is not None and node.individual is not None:
                    best = (j, node.individual)
                j += 1
            if best is None:
                i += 1
                continue
            end_word, individual = best
            mentions.append(Mention(individual, words[i][1], words[end_word][2]))
            # a token that split into several words may be partly consumed: skip whole tokens
            i = end_word + 1
            while i < len(words) and words[i][1] == words[end_word][1]:
                i += 1
        return mentions

    def mentioned(self, text: str) -> set[str]:
        return {m.individual for m in self.find(text)}


def view_of(pack: Pack, pools: Pools, artifact: Artifact) -> set[str]:
    """Individuals some object-kind cell of the artifact resolves to."""
    view: set[str] = set()
    for table, rows in artifact.tables.items():
        binding = pack.tables.get(table)
        if binding is None:
            continue
        cols = [c for c, b in binding.columns.items() if b.kind == "object"]
        for row in rows:
            for c in cols:
                ind = pools.resolve(row.get(c))
                if ind is not None:
                    view.add(ind)
    return view


def key_entities(pack: Pack, pools: Pools, artifact: Artifact) -> list[str]:
    """Individuals in the `[prose] entity_columns` cells, in first-seen order."""
    keys: dict[str, None] = {}
    for ref in pack.config.prose.entity_columns:
        table, _, column = ref.partition(".")
        for row in artifact.tables.get(table, []):
            ind = pools.resolve(row.get(column))
            if ind is not None:
                keys.setdefault(ind, None)
    return list(keys)


def truncation_rules(prose: str) -> list[str]:
    """Names of the truncation rules the prose trips (empty list: it ends properly)."""
    text = prose.rstrip()
    if not text:
        return []
    fired: list[str] = []
    if text.endswith(("...", "…")):
        fired.append("ends with an ellipsis")
    elif not _TERMINAL.search(text):
        fired.append("no terminal punctuation (. ! ?)")
    tokens = _TOKEN.findall(text)
    last = tokens[-1].lower() if tokens else ""
    tail_is_word = bool(tokens) and text[-1].isalnum()
    if last in CONNECTORS and (tail_is_word or last in _HARD_CONNECTORS):
        fired.append(f"ends with the connector word {last!r}")
    for open_, close in _PAIRS:
        if text.count(open_) != text.count(close):
            fired.append(f"unbalanced {open_}{close}")
    if text.count('"') % 2:
        fired.append('unbalanced "')
    return fired


def _sentence_at(text: str, pos: int) -> str:
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.end() > pos:
            return text[start : m.start()].strip()
        start = m.end()
    return text[start:].strip()


class ProseGate:
    """Judges prose against the artifact's tables (see the module docstring)."""

    name = "prose_gate"

    def __init__(self, pack: Pack, pools: Pools) -> None:
        self.pack = pack
        self.pools = pools
        self.matcher = EntityMatcher(pools)

    def judge(self, candidates: Sequence[Artifact]) -> list[Verdict]:
        return [self._judge_one(a) for a in candidates]

    def _judge_one(self, artifact: Artifact) -> Verdict:
        settings = self.pack.config.prose
        if not settings.enabled:
            return Verdict(gate=self.name, artifact_id=artifact.id)
        prose = artifact.prose
        view = view_of(self.pack, self.pools, artifact)
        keys = key_entities(self.pack, self.pools, artifact)
        mentions = self.matcher.find(prose)
        first: dict[str, Mention] = {}
        for m in mentions:
            first.setdefault(m.individual, m)
        critiques: list[Critique] = []
        unknown = sorted((m for i, m in first.items() if i not in view), key=lambda m: m.start)
        for m in unknown:
            critiques.append(
                Critique(
                    code="prose.unknown_entity",
                    gate=self.name,
                    location=Location(span=(m.start, m.end)),
                    observed=m.individual,
                    evidence=(_sentence_at(prose, m.start),),
                    fix_hint="mention only entities the tables hold, or add them to the tables",
                    message=f"the prose mentions {prose[m.start:m.end]!r}, "
                    "which no cell of the artifact names",
                )
            )
        missing = [k for k in keys if k not in first]
        coverage = (len(keys) - len(missing)) / len(keys) if keys else 1.0
        if missing and coverage < settings.min_coverage:
            for k in missing:
                critiques.append(
                    Critique(
                        code="prose.missing_entity",
                        gate=self.name,
                        observed=k,
                        expected=self.pools.label(k),
                        fix_hint="mention every equipment key entity by its label",
                        message=f"the prose never mentions {self.pools.label(k)!r} "
                        f"(coverage {coverage:.2f} < {settings.min_coverage:.2f})",
                    )
                )
        critiques.extend(self._truncation(prose))
        metrics = {
            "mentions": float(len(mentions)),
            "unknown_entities": float(len(unknown)),
            "missing_entities": float(len(missing)),
            "coverage": coverage,
            "words": float(len(prose.split())),
        }
        return Verdict(
            gate=self.name, artifact_id=artifact.id, critiques=tuple(critiques), metrics=metrics
        )

    def _truncation(self, prose: str) -> list[Critique]:
        fired = truncation_rules(prose)
        if not fired:
            return []
        text = prose.rstrip()
        return [
            Critique(
                code="prose.truncated",
                gate=self.name,
                location=Location(span=(max(0, len(text) - 40), len(text))),
                observed=text[-40:],
                evidence=tuple(fired),
                fix_hint="end the prose with a complete sentence",
                message="the prose looks cut off: " + "; ".join(fired),
            )
        ]
