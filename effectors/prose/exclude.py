"""What prose matching leaves out (`[prose] exclude_classes`, `exclude_labels`), and which
labels are common English words (a pack's candidates for those keys).

An ontology's labels and IRI fragments are all looked for in the prose, so a label that is an
ordinary word ("white", "red", "dry", "full") is read as a mention of its individual in
"serve the whites cool" or "red meat", and is then an unknown entity. A pack leaves such
individuals out of prose matching by class (every member of `exclude_classes`, inferred
members too) or by spelling (`exclude_labels`: a label, IRI fragment or alias, matched after
the same normalisation as the prose). Cells are not affected: VALUE_GATE still resolves
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

from harness.errors import PackError
from harness.pack import Pack
from harness.pools import Pools, normalize_label

__all__ = ["Exclusions", "common_word_labels", "common_words"]


@dataclass(frozen=True)
class Exclusions:
    """Normalised spellings never matched, and individuals none of whose spellings are."""

    labels: frozenset[str] = frozenset()
    individuals: frozenset[str] = frozenset()

    @classmethod
    def of(cls, pack: Pack, pools: Pools) -> Exclusions:
        """The pack's exclusions; a class or spelling the ontology does not have is a
        `PackError` (a typo would otherwise exclude nothing, silently)."""
        settings = pack.config.prose
        toml = pack.root / "pack.toml"
        unknown = [c for c in settings.exclude_classes if c not in pools.classes]
        if unknown:
            raise PackError(
                f"`prose.exclude_classes` names {unknown}, which the ontology has no class for",
                file=toml,
                hint="give class IRI fragments as in the ontology (e.g. WineColor)",
            )
        individuals = frozenset(m for c in settings.exclude_classes for m in pools.members(c))
        known = {normalize_label(t) for ind in pools.individuals.values()
                 for t in (*ind.labels, ind.name.replace("_", " "))}
        known |= {normalize_label(t) for t in pools.aliases}
        known |= {normalize_label(t.replace("_", " "))  # classes prose may mention (issue 27)
                  for c in pools.mentionable_classes for t in (*pools.classes[c].labels, c)}
        labels = {normalize_label(t): t for t in settings.exclude_labels}
        stray = [t for k, t in labels.items() if k not in known]
        if stray:
            raise PackError(
                f"`prose.exclude_labels` names {stray}, which are no label, IRI fragment or "
                "alias of any individual or of a class prose may mention",
                file=toml,
                hint="give spellings as the ontology has them (any case)",
            )
        return cls(frozenset(labels), individuals)

    def keeps(self, individual: str, words: list[str]) -> bool:
        """Is this spelling (its normalised words) of `individual` matched in prose?"""
        return individual not in self.individuals and " ".join(words) not in self.labels


@cache
def common_words() -> frozenset[str]:
    """The most frequent English words (see effectors/prose/data/NOTICE for the source)."""
    text = resources.files("effectors.prose").joinpath("data/common_en.txt").read_text("utf-8")
    return frozenset(w for line in text.splitlines() if not line.startswith("#")
                     for w in line.split())


def common_word_labels(pools: Pools,
                       exclusions: Exclusions | None = None) -> list[tuple[str, str]]:
    """(individual, spelling) for each label, IRI fragment or alias that is one common English
    word (or its plural): prose matching would read the word as that individual. Spellings
    an `Exclusions` already leaves out are not listed. Sorted; for `pack check` warnings."""
    words = common_words()
    skip = exclusions or Exclusions()
    aliases: dict[str, list[str]] = {}
    for text, name in pools.aliases.items():
        aliases.setdefault(name, []).append(text)
    out: set[tuple[str, str]] = set()
    for name, info in pools.individuals.items():
        for text in (*info.labels, name.replace("_", " "), *aliases.get(name, ())):
            norm = normalize_label(text).split()
            if len(norm) == 1 and norm[0] in words and skip.keeps(name, norm):
                out.add((name, text))
    return sorted(out)
