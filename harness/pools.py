"""The pools of a pack's value ontology as plain data (no owlready2 here).

`ontology/` computes a `Pools` with HermiT once per ontology content hash and caches it
as JSON under `.membrane/`; gates and proposers read it without touching the reasoner.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from harness.normalize import Strictness, normalize

__all__ = ["CanonicalForm", "ClassInfo", "IndividualInfo", "Pools", "RowRule", "normalize_label"]

CanonicalForm = Literal["label", "iri"]


def normalize_label(text: str) -> str:
    """The loose form (`harness.normalize`, "loose"): case-, accent- and
    punctuation-insensitive; the prose matcher's words."""
    return normalize(text, "loose")


class IndividualInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # IRI fragment
    labels: tuple[str, ...] = ()  # rdfs:label, skos:prefLabel, skos:altLabel
    types: tuple[str, ...] = ()  # every named class it is entailed to belong to (fragments)
    same_as: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return self.labels[0] if self.labels else self.name


class ClassInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    members: tuple[str, ...] = ()  # individuals entailed to be members, sorted
    superclasses: tuple[str, ...] = ()  # entailed named superclasses
    disjoint_with: tuple[str, ...] = ()  # entailed disjoint named classes


class RowRule(BaseModel):
    """What the ontology requires of a row's cells, read from the (classified) ontology.

    A row of `base_class` (the table's row class) is entailed to be a `row_class` when each
    `when` property has a value in the given class (an equivalence with hasValue/some
    restrictions); it must then have every `require` property's values in the given class
    (allValuesFrom restrictions and property ranges). The base rule has `when == {}`.
    `axioms` are the axioms involved, rendered for humans (evidence in critiques).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    row_class: str
    base_class: str
    when: dict[str, str] = Field(default_factory=dict)
    require: dict[str, str] = Field(default_factory=dict)
    axioms: tuple[str, ...] = ()


class Pools(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ontology_hash: str
    individuals: dict[str, IndividualInfo] = Field(default_factory=dict)
    classes: dict[str, ClassInfo] = Field(default_factory=dict)
    row_rules: tuple[RowRule, ...] = ()
    # The pack's choices (`[ontology]` in pack.toml), set by `with_pack`, not cached:
    matching: Strictness = "standard"  # harness.normalize strictness for cells
    canonical_form: CanonicalForm = "label"  # what a resolved cell is written as
    aliases: dict[str, str] = Field(default_factory=dict)  # spelling -> individual fragment
    _by_label: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)

    def model_post_init(self, _context: object) -> None:
        index: dict[str, tuple[str, str]] = {}
        for ind in self.individuals.values():
            index.setdefault(self.key(ind.name), (ind.name, "iri"))
            for i, text in enumerate(ind.labels):
                index.setdefault(self.key(text), (ind.name, "label" if i == 0 else "alt_label"))
        for text, name in self.aliases.items():
            if name in self.individuals:
                index.setdefault(self.key(text), (name, "alias"))
        self._by_label = index

    def with_pack(
        self, matching: Strictness, canonical_form: CanonicalForm, aliases: dict[str, str]
    ) -> Pools:
        """These pools under a pack's matching rule, canonical form and aliases."""
        if (matching, canonical_form, aliases) == (
            self.matching, self.canonical_form, self.aliases
        ):
            return self
        return Pools.model_validate(
            {**self.model_dump(), "matching": matching, "canonical_form": canonical_form,
             "aliases": dict(aliases)}
        )

    def key(self, text: str) -> str:
        """The matching key of `text` under the pack's rule (`harness.normalize`)."""
        return normalize(text, self.matching)

    def resolve(self, value: object) -> str | None:
        """The individual a cell names (by IRI fragment, any label or alias), else None."""
        hit = self.resolve_via(value)
        return hit[0] if hit else None

    def resolve_via(self, value: object) -> tuple[str, str] | None:
        """(individual, via) for a cell that names one, else None. `via` is what decided:
        "iri" (the IRI fragment), "label" (the preferred label), "alt_label" (another
        label) or "alias" (a pack alias); the first entry wins on a clash, in that order."""
        if not isinstance(value, str):
            return None
        if value in self.individuals:
            return value, "iri"
        return self._by_label.get(self.key(value))

    def canonical(self, individual: str) -> str:
        """The canonical form of an individual: its preferred label, or its IRI fragment."""
        if self.canonical_form == "iri":
            return individual
        return self.label(individual)

    def members(self, cls: str) -> tuple[str, ...]:
        info = self.classes.get(cls)
        return info.members if info else ()

    def label(self, individual: str) -> str:
        info = self.individuals.get(individual)
        return info.label if info else individual

    def is_member(self, individual: str, cls: str) -> bool:
        info = self.individuals.get(individual)
        return info is not None and (cls in info.types)

    def required_classes(self, base_class: str, values: dict[str, str | None]) -> dict[str, str]:
        """property -> required class for a row of `base_class` whose object-property values
        (resolved individuals, or None) are `values`. The most specific requirement wins."""
        required: dict[str, str] = {}
        for rule in self.row_rules:
            if rule.base_class != base_class:
                continue
            if all(
                (v := values.get(p)) is not None and self.is_member(v, c)
                for p, c in rule.when.items()
            ):
                for p, c in rule.require.items():
                    cur = required.get(p)
                    if cur is None or cur in self._superclasses(c):  # c is more specific
                        required[p] = c
        return required

    def _superclasses(self, cls: str) -> tuple[str, ...]:
        info = self.classes.get(cls)
        return info.superclasses if info else ()
