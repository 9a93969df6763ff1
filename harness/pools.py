"""The pools of a pack's value ontology as plain data (no owlready2 here).

`ontology/` computes a `Pools` with HermiT once per ontology content hash and caches it
as JSON under `.membrane/`; gates and proposers read it without touching the reasoner.
"""

from __future__ import annotations

import difflib
import heapq
from collections.abc import Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from harness.normalize import Strictness, normalize

__all__ = [
    "CanonicalForm", "ClassInfo", "IndividualInfo", "Pools", "RowRule", "fragment_of",
    "normalize_label",
]

CanonicalForm = Literal["label", "iri"]


def normalize_label(text: str) -> str:
    """The loose form (`harness.normalize`, "loose"): case-, accent- and
    punctuation-insensitive; the prose matcher's words."""
    return normalize(text, "loose")


def fragment_of(iri: str) -> str:
    """The IRI's fragment (after `#`, else after the last `/` or `:`; `ontology.axioms`)."""
    for sep in ("#", "/", ":"):
        if sep in iri:
            tail = iri.rsplit(sep, 1)[1]
            if tail:
                return tail
    return iri


class IndividualInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str  # its key: the IRI fragment, or the whole IRI when fragments collide
    labels: tuple[str, ...] = ()  # rdfs:label, skos:prefLabel, skos:altLabel
    types: tuple[str, ...] = ()  # every named class it is entailed to belong to (fragments)
    same_as: tuple[str, ...] = ()
    iri: str = ""
    deprecated: bool = False  # owl:deprecated true (or a deprecatedInVersion annotation)
    replaced_by: tuple[str, ...] = ()  # dcterms:isReplacedBy (keys when in the pools, else IRIs)

    @property
    def label(self) -> str:
        return self.labels[0] if self.labels else self.name


class ClassInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    members: tuple[str, ...] = ()  # individuals entailed to be members, sorted
    superclasses: tuple[str, ...] = ()  # entailed named superclasses
    disjoint_with: tuple[str, ...] = ()  # entailed disjoint named classes
    iri: str = ""
    labels: tuple[str, ...] = ()
    deprecated: bool = False
    replaced_by: tuple[str, ...] = ()
    unsatisfiable: bool = False  # HermiT: equivalent to owl:Nothing

    @property
    def label(self) -> str:
        return self.labels[0] if self.labels else self.name


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


_RESOLVED_MAX = 65_536  # cell texts whose resolution a Pools keeps


class Pools(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ontology_hash: str
    individuals: dict[str, IndividualInfo] = Field(default_factory=dict)
    classes: dict[str, ClassInfo] = Field(default_factory=dict)
    row_rules: tuple[RowRule, ...] = ()
    # fragment -> the IRIs (individuals or classes) that share it; the one in the pack's
    # namespace keeps the fragment as its key, the others are keyed by their IRI
    collisions: dict[str, tuple[str, ...]] = Field(default_factory=dict)
    # The pack's choices (`[ontology]` in pack.toml), set by `with_pack`, not cached:
    matching: Strictness = "standard"  # harness.normalize strictness for cells
    canonical_form: CanonicalForm = "label"  # what a resolved cell is written as
    aliases: dict[str, str] = Field(default_factory=dict)  # spelling -> individual fragment
    prefixes: dict[str, str] = Field(default_factory=dict)  # prefix -> namespace IRI
    # the individuals prose may mention: members of the bound object columns' ranges (None:
    # every individual, when a bound column has no range)
    mentionable: tuple[str, ...] | None = None
    # the classes prose may mention: those a class column may name (satisfiable, not
    # deprecated, under a declared `root`); a mention is keyed by the class's IRI (issue 27)
    mentionable_classes: tuple[str, ...] = ()
    _by_label: dict[str, tuple[str, str]] = PrivateAttr(default_factory=dict)
    _ambiguous: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    _by_iri: dict[str, str] = PrivateAttr(default_factory=dict)
    _roots: dict[str, tuple[tuple[str, ...], dict[str, str]]] = PrivateAttr(default_factory=dict)
    _grams: dict[str, tuple[dict[str, list[str]], dict[str, int]]] = PrivateAttr(
        default_factory=dict)
    _class_index: tuple[dict[str, str], dict[str, tuple[str, ...]], dict[str, str]] | None = (
        PrivateAttr(default=None))
    _mention_classes: dict[str, str] | None = PrivateAttr(default=None)
    _class_views: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    # resolve_via's answers by cell text (the pools are frozen); cleared when full
    _resolved: dict[str, tuple[str, str] | None] = PrivateAttr(default_factory=dict)

    def model_post_init(self, _context: object) -> None:
        self._by_iri = {i.iri: n for n, i in self.individuals.items() if i.iri}
        entries: list[tuple[str, str, str, bool]] = []  # (text, individual, via, deprecated)
        for name, ind in self.individuals.items():
            frag = fragment_of(ind.iri) if ind.iri else name
            entries.append((name, name, "iri" if frag == name else "iri_fragment", ind.deprecated))
            if frag != name:
                entries.append((frag, name, "iri_fragment", ind.deprecated))
            entries += [(t, name, "label" if i == 0 else "alt_label", ind.deprecated)
                        for i, t in enumerate(ind.labels)]
        entries += [(t, n, "alias", False) for t, n in self.aliases.items()
                    if n in self.individuals]
        self._by_label, self._ambiguous = _index(entries, self.key,
                                                 ("iri", "iri_fragment", "label", "alt_label",
                                                  "alias"))

    def _classes_index(self) -> tuple[dict[str, str], dict[str, tuple[str, ...]], dict[str, str]]:
        """(matching key -> class, ambiguous key -> classes, IRI -> class), built once."""
        if self._class_index is None:
            entries: list[tuple[str, str, str, bool]] = []
            for name, c in self.classes.items():
                frag = fragment_of(c.iri) if c.iri else name
                entries.append((name, name, "iri" if frag == name else "iri_fragment",
                                c.deprecated))
                if frag != name:
                    entries.append((frag, name, "iri_fragment", c.deprecated))
                entries += [(t, name, "label", c.deprecated) for t in c.labels]
            found, ambiguous = _index(entries, self.key, ("iri", "iri_fragment", "label"))
            by_iri = {c.iri: n for n, c in self.classes.items() if c.iri}
            self._class_index = ({k: v[0] for k, v in found.items()}, ambiguous, by_iri)
        return self._class_index

    def with_pack(
        self, matching: Strictness, canonical_form: CanonicalForm, aliases: dict[str, str],
        prefixes: dict[str, str] | None = None, mentionable: tuple[str, ...] | None = None,
        mentionable_classes: tuple[str, ...] = (),
    ) -> Pools:
        """These pools under a pack's matching rule, canonical form, aliases, prefixes and
        the individuals and classes its prose may mention."""
        prefixes = dict(prefixes or {})
        if (matching, canonical_form, aliases, prefixes, mentionable, mentionable_classes) == (
            self.matching, self.canonical_form, self.aliases, self.prefixes, self.mentionable,
            self.mentionable_classes,
        ):
            return self
        return Pools.model_validate(
            {**self.model_dump(), "matching": matching, "canonical_form": canonical_form,
             "aliases": dict(aliases), "prefixes": prefixes, "mentionable": mentionable,
             "mentionable_classes": mentionable_classes}
        )

    # -- classes as prose mentions (issue 27) ---------------------------------------------
    def class_mention(self, cls: str) -> str:
        """The name a prose mention of class `cls` carries: its IRI (never its fragment
        alone, which an individual's key may equal), else its key."""
        info = self.classes.get(cls)
        return info.iri if info is not None and info.iri else cls

    def mentioned_class(self, name: str) -> str | None:
        """The mentionable class a mention name (`class_mention`) stands for, else None."""
        if self._mention_classes is None:
            self._mention_classes = {self.class_mention(c): c for c in self.mentionable_classes}
        return self._mention_classes.get(name)

    def class_view(self, cls: str) -> tuple[str, ...]:
        """The mention names true of a cell naming class `cls`: the class and each of its
        entailed superclasses that prose may mention ("the fan" of a Supply_Fan row)."""
        hit = self._class_views.get(cls)
        if hit is None:
            info = self.classes.get(cls)
            allowed = set(self.mentionable_classes)
            hit = () if info is None else tuple(
                self.class_mention(c) for c in (cls, *info.superclasses) if c in allowed)
            self._class_views[cls] = hit
        return hit

    def short(self, iri: str) -> str:
        """`prefix:local` for an IRI under a declared prefix, else the IRI."""
        for prefix, ns in sorted(self.prefixes.items()):
            if iri.startswith(ns) and iri != ns:
                return f"{prefix}:{iri[len(ns):]}"
        return iri

    def expand(self, text: str) -> str | None:
        """The IRI a prefixed name (`brick:Pump`, a `[ontology] prefixes` prefix) stands for."""
        prefix, sep, local = text.partition(":")
        ns = self.prefixes.get(prefix) if sep else None
        return ns + local if ns is not None and local and " " not in local else None

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
        memo = self._resolved
        if value in memo:
            return memo[value]
        if value in self.individuals:
            hit: tuple[str, str] | None = (value, "iri")
        elif (iri := self.expand(value) or value) in self._by_iri:
            hit = self._by_iri[iri], "iri"
        else:
            hit = self._by_label.get(self.key(value))
        if len(memo) >= _RESOLVED_MAX:
            memo.clear()
        memo[value] = hit
        return hit

    def ambiguous(self, value: object) -> tuple[str, ...]:
        """The individuals a cell could name when it names none for sure (two IRIs share
        its fragment, or two individuals its label): empty when it resolves or names none."""
        if not isinstance(value, str) or self.resolve_via(value) is not None:
            return ()
        return self._ambiguous.get(self.key(value), ())

    # -- classes (class-valued columns) ----------------------------------------------------
    def resolve_class(self, value: object) -> str | None:
        """The class a cell names: its key, IRI, prefixed name, IRI fragment or a label."""
        if not isinstance(value, str):
            return None
        if value in self.classes:
            return value
        found, _, by_iri = self._classes_index()
        iri = self.expand(value) or value
        if iri in by_iri:
            return by_iri[iri]
        return found.get(self.key(value))

    def ambiguous_class(self, value: object) -> tuple[str, ...]:
        if not isinstance(value, str) or self.resolve_class(value) is not None:
            return ()
        return self._classes_index()[1].get(self.key(value), ())

    def root_class(self, root: str, namespace: str = "") -> str | None:
        """The class a column's `root` names (as a cell would, or as `namespace` + root)."""
        return self.resolve_class(root) or self.resolve_class(namespace + root)

    def is_under(self, cls: str, root: str) -> bool:
        """Whether `cls` is `root` or entailed to be a subclass of it."""
        info = self.classes.get(cls)
        return info is not None and (cls == root or root in info.superclasses)

    def valid_classes(self, root: str) -> list[str]:
        """The classes a class cell under `root` may name: satisfiable, not deprecated."""
        return list(self._valid(root)[0])

    def _valid(self, root: str) -> tuple[tuple[str, ...], dict[str, str]]:
        """(valid classes under `root`, loose label or fragment -> class), once per root."""
        hit = self._roots.get(root)
        if hit is None:
            valid = tuple(n for n, c in self.classes.items()
                          if not c.unsatisfiable and not c.deprecated and self.is_under(n, root))
            names: dict[str, str] = {}
            for c in valid:
                info = self.classes[c]
                for t in (*info.labels, fragment_of(info.iri) if info.iri else c):
                    names.setdefault(normalize_label(t.replace("_", " ")), c)
            hit = self._roots[root] = (valid, names)
        return hit

    def nearest_classes(self, text: str, root: str, n: int = 3) -> list[str]:
        """The valid classes under `root` whose labels (or fragments) are nearest `text`:
        difflib's ratio over the 12 names sharing most character trigrams with it (difflib
        over all of Brick's ~1,000 names under a root cost ~50 ms a cell)."""
        names = self._valid(root)[1]
        query = normalize_label(text.replace("_", " "))
        grams = _trigrams(query)
        index = self._grams.get(root)
        if index is None:  # trigram -> the names holding it, and each name's trigram count
            postings: dict[str, list[str]] = {}
            sizes: dict[str, int] = {}
            for k in names:
                kg = _trigrams(k)
                sizes[k] = len(kg)
                for g in kg:
                    postings.setdefault(g, []).append(k)
            index = self._grams[root] = (postings, sizes)
        postings, sizes = index
        hits: dict[str, int] = {}
        for g in grams:
            for k in postings.get(g, ()):
                hits[k] = hits.get(k, 0) + 1
        shortlist = heapq.nlargest(  # Jaccard similarity of the trigram sets
            12, hits, key=lambda k: hits[k] / (len(grams) + sizes[k] - hits[k]))
        close = difflib.get_close_matches(query, shortlist, n=4 * n, cutoff=0.5)
        return list(dict.fromkeys(names[k] for k in close))[:n]

    def class_label(self, cls: str) -> str:
        info = self.classes.get(cls)
        return info.label if info else cls

    def canonical(self, individual: str) -> str:
        """The canonical form of an individual: its preferred label, or its IRI fragment."""
        if self.canonical_form == "iri":
            return individual
        return self.label(individual)

    def members(self, cls: str) -> tuple[str, ...]:
        info = self.classes.get(cls)
        return info.members if info else ()

    def label(self, individual: str) -> str:
        """The preferred label of an individual, or of a class by its mention name."""
        info = self.individuals.get(individual)
        if info is not None:
            return info.label
        cls = self.mentioned_class(individual) if self.mentionable_classes else None
        return individual if cls is None else self.class_label(cls)

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


def _trigrams(text: str) -> frozenset[str]:
    padded = f"  {text} "
    return frozenset(padded[i:i + 3] for i in range(len(padded) - 2))


def _index(
    entries: list[tuple[str, str, str, bool]], key: Callable[[str], str], levels: tuple[str, ...]
) -> tuple[dict[str, tuple[str, str]], dict[str, tuple[str, ...]]]:
    """matching key -> (entity, via), and the keys two entities share at the same level
    (ambiguous: no entity wins). An earlier level wins (`levels`: IRI before label before
    alias), and at one level an entity in use wins over a deprecated one."""
    rank = {v: i for i, v in enumerate(levels)}
    best: dict[str, tuple[int, bool, list[str], str]] = {}  # key -> (level, deprecated, names, via)
    for text, name, via, deprecated in entries:
        k = key(text)
        cur = best.get(k)
        mine = (rank[via], deprecated)
        if cur is None or mine < cur[:2]:
            best[k] = (rank[via], deprecated, [name], via)
        elif mine == cur[:2] and name not in cur[2]:
            cur[2].append(name)
    found = {k: (v[2][0], v[3]) for k, v in best.items() if len(v[2]) == 1}
    ambiguous = {k: tuple(sorted(v[2])) for k, v in best.items() if len(v[2]) > 1}
    return found, ambiguous
