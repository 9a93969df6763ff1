"""What the ontology requires of rows: row rules, violation classes and datatype rules.

Read from the asserted axioms of each table's row class, its entailed superclasses and
its *definable* entailed subclasses (a class `S ⊑ R` with an equivalence, e.g.
`ImagingEquipmentRow ≡ EquipmentRow ⊓ ∃hasEquipmentType.ImagingEquipmentType`, which a
row can be inferred to belong to), plus the ranges of the bound object properties.

Every `C ⊑ ∀p.D` on one of those classes and every `range(p) = D` of a bound object
property becomes a *violation class* `V ≡ C ⊓ ∃p.¬D` (ranges: `V ≡ ∃p.¬D`); `transform`
writes the base ontology with those axioms removed and the violation classes added.

Cardinality restrictions (`≥n`, `≤n`, `=n`, qualified by a named class or not) on the same
classes, and functional bound properties (and functional super-properties), become
`CardinalityRule`s, checked on each row as a closed record (`effectors.value_gate`).
"""

from __future__ import annotations

from typing import Any

import owlready2

from harness.pack import Pack
from harness.pools import Pools, RowRule
from ontology.axioms import fragment, render
from ontology.index import VIOLATION_NS, CardinalityRule, DataRule, ViolationClass
from ontology.reason import Classification

__all__ = ["RuleBuilder"]

_OWL = "http://www.w3.org/2002/07/owl#"
_RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"
_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_SUBCLASS = "<http://www.w3.org/2000/01/rdf-schema#subClassOf>"
_RANGE = "<http://www.w3.org/2000/01/rdf-schema#range>"
_FACETS = ("min_inclusive", "max_inclusive", "min_exclusive", "max_exclusive")
_CARDS = {owlready2.MIN: "≥", owlready2.MAX: "≤", owlready2.EXACTLY: "="}


def _node(obj: Any) -> str:
    """N-Triples term of a named entity or of an owlready2 construct (blank node)."""
    storid = obj.storid
    return f"_:{-storid}" if isinstance(storid, int) and storid < 0 else f"<{obj.iri}>"


def _named(obj: Any) -> bool:
    return isinstance(obj, owlready2.ThingClass)


class RuleBuilder:
    """Reads rules off the loaded World, using the HermiT classification for entailments."""

    def __init__(
        self,
        world: Any,
        result: Classification,
        pools: Pools,
        row_classes: dict[str, Any],
        props: dict[str, Any],
    ) -> None:
        self.world = world
        self.result = result
        self.pools = pools
        self.row_classes = row_classes
        self.props = props
        self.definitions: dict[str, tuple[str, ...]] = {}
        self._violations: list[tuple[ViolationClass, str, str | None]] = []
        self._cards: dict[str, CardinalityRule] = {}
        self._filler_nodes: dict[str, str] = {}
        self._prop_iris: dict[str, str] = {}
        self._bound = {
            t: [p for key, p in props.items() if key.startswith(f"{t}.")] for t in row_classes
        }
        self._collect()

    # -- reading ------------------------------------------------------------------------
    def _entity(self, iri: str) -> Any:
        return self.world[iri]

    def _supers(self, cls: Any) -> list[Any]:
        ancestors = sorted(self.result.ancestors(str(cls.iri)))
        return [e for a in ancestors if _named(e := self._entity(a))]

    def _definable_subs(self, cls: Any) -> list[Any]:
        iri = str(cls.iri)
        out = []
        for c in self.world.classes():
            if c is not cls and c.equivalent_to and iri in self.result.ancestors(str(c.iri)):
                out.append(c)
        return sorted(out, key=lambda c: str(c.iri))

    def _only(self, cls: Any) -> list[Any]:
        return [
            r for r in cls.is_a
            if isinstance(r, owlready2.Restriction) and r.type == owlready2.ONLY
        ]

    def _collect(self) -> None:
        seen: set[int] = set()
        bound_objs = {
            p.iri: p for p in self.props.values() if isinstance(p, owlready2.ObjectPropertyClass)
        }
        for cls in self.row_classes.values():
            for c in [*self._supers(cls), *self._definable_subs(cls)]:
                self._cardinalities(c)
                for r in self._only(c):
                    prop = r.property
                    if not isinstance(prop, owlready2.ObjectPropertyClass) or r.storid in seen:
                        continue
                    seen.add(r.storid)
                    axiom = f"{fragment(str(c.iri))} ⊑ {render(r)}"
                    triple = f"<{c.iri}> {_SUBCLASS} {_node(r)} ."
                    self._add("restriction", c, prop, filler=r.value, axiom=axiom, triple=triple)
        for iri, prop in sorted(bound_objs.items()):
            for rng in prop.range:
                axiom = f"range({prop.name}) = {render(rng)}"
                triple = f"<{iri}> {_RANGE} {_node(rng)} ."
                self._add("range", None, prop, filler=rng, axiom=axiom, triple=triple)

    def _counted(self, prop: Any) -> tuple[str, ...]:
        """Bound object properties whose values are values of `prop` (it or a sub-property)."""
        return tuple(sorted({
            q.name for q in self.props.values()
            if isinstance(q, owlready2.ObjectPropertyClass) and prop in q.ancestors()
        }))

    def _cardinalities(self, cls: Any) -> None:
        for r in cls.is_a:
            if not isinstance(r, owlready2.Restriction) or r.type not in _CARDS:
                continue
            counted = self._counted(r.property)
            filler = r.value
            if not counted or not (filler is None or filler is owlready2.Thing or _named(filler)):
                continue  # a complex qualifier: left to the reasoner
            n = int(r.cardinality)
            axiom = f"{fragment(str(cls.iri))} ⊑ {render(r)}"
            self._cards[axiom] = CardinalityRule(
                on_class=fragment(str(cls.iri)), property=r.property.name, counted=counted,
                min=None if r.type == owlready2.MAX else n,
                max=None if r.type == owlready2.MIN else n,
                qualifier=(fragment(str(filler.iri))
                           if _named(filler) and filler is not owlready2.Thing else None),
                axiom=axiom,
            )

    def cardinalities(self) -> tuple[CardinalityRule, ...]:
        """Cardinality restrictions on row classes, plus functional bound properties."""
        out = dict(self._cards)
        for q in self.props.values():
            if not isinstance(q, owlready2.ObjectPropertyClass):
                continue
            for p in sorted(q.ancestors(), key=lambda e: str(e.iri)):
                if isinstance(p, owlready2.ObjectPropertyClass) and (
                    owlready2.FunctionalProperty in p.is_a
                ):
                    axiom = f"Functional({p.name})"
                    out[axiom] = CardinalityRule(
                        on_class="⊤", property=p.name, counted=self._counted(p), max=1,
                        axiom=axiom,
                    )
        return tuple(out[k] for k in sorted(out))

    def _add(
        self, kind: Any, cls: Any, prop: Any, *, filler: Any, axiom: str, triple: str
    ) -> None:
        n = len(self._violations)
        v = ViolationClass(
            iri=f"{VIOLATION_NS}V{n}",
            kind=kind,
            on_class=fragment(str(cls.iri)) if cls is not None else "⊤",
            property=prop.name,
            required=fragment(str(filler.iri)) if _named(filler) else render(filler),
            required_named=_named(filler),
            axiom=axiom,
        )
        self._violations.append((v, triple, None if cls is None else f"<{cls.iri}>"))
        self._filler_nodes[v.iri] = _node(filler)
        self._prop_iris[prop.name] = str(prop.iri)

    # -- outputs --------------------------------------------------------------------------
    def violations(self) -> tuple[ViolationClass, ...]:
        return tuple(v for v, _, _ in self._violations)

    def transform(self, base_nt: str) -> str:
        """The base N-Triples with each ∀/range axiom replaced by its violation class."""
        drop = {t for _, t, _ in self._violations}
        kept = [line for line in base_nt.splitlines() if line.strip() not in drop]
        extra: list[str] = []
        for n, (v, _, cls) in enumerate(self._violations):
            prop = f"<{self._prop_iris[v.property]}>"
            b = f"_:membraneViol{n}"
            some = [
                f"{b}r {_RDF_TYPE} <{_OWL}Restriction> .",
                f"{b}r <{_OWL}onProperty> {prop} .",
                f"{b}r <{_OWL}someValuesFrom> {b}n .",
                f"{b}n {_RDF_TYPE} <{_OWL}Class> .",
                f"{b}n <{_OWL}complementOf> {self._filler_nodes[v.iri]} .",
            ]
            extra += [f"<{v.iri}> {_RDF_TYPE} <{_OWL}Class> .", *some]
            if cls is None:
                extra.append(f"<{v.iri}> <{_OWL}equivalentClass> {b}r .")
                continue
            extra += [
                f"<{v.iri}> <{_OWL}equivalentClass> {b}a .",
                f"{b}a {_RDF_TYPE} <{_OWL}Class> .",
                f"{b}a <{_OWL}intersectionOf> {b}l1 .",
                f"{b}l1 <{_RDF}first> {cls} .",
                f"{b}l1 <{_RDF}rest> {b}l2 .",
                f"{b}l2 <{_RDF}first> {b}r .",
                f"{b}l2 <{_RDF}rest> <{_RDF}nil> .",
            ]
        return "\n".join(kept) + "\n" + "\n".join(extra) + "\n"

    def _most_specific(self, candidates: list[str]) -> str | None:
        named = [c for c in candidates if c in self.pools.classes]
        if not named:
            return None
        return max(named, key=lambda c: (len(self.pools.classes[c].superclasses), c))

    def _requirements(self, classes: list[Any], table: str) -> tuple[dict[str, str], list[str]]:
        wanted: dict[str, list[str]] = {}
        axioms: list[str] = []
        bound = {p.name for p in self._bound[table] if isinstance(p, owlready2.ObjectPropertyClass)}
        on = {fragment(str(c.iri)) for c in classes}
        for v in self.violations():
            if v.property in bound and v.required_named and (v.kind == "range" or v.on_class in on):
                wanted.setdefault(v.property, []).append(v.required)
                axioms.append(v.axiom)
        require = {p: c for p, cs in wanted.items() if (c := self._most_specific(cs))}
        return require, axioms

    def row_rules(self) -> tuple[RowRule, ...]:
        rules: list[RowRule] = []
        for table, cls in self.row_classes.items():
            base = fragment(str(cls.iri))
            up = self._supers(cls)
            require, axioms = self._requirements(up, table)
            rules.append(
                RowRule(row_class=base, base_class=base, require=require, axioms=tuple(axioms))
            )
            allowed = {str(c.iri) for c in up}
            for sub in self._definable_subs(cls):
                when, defs = self._conditions(sub, allowed)
                if not when:
                    continue
                req, ax = self._requirements(self._supers(sub), table)
                self.definitions[fragment(str(sub.iri))] = tuple(defs)
                rules.append(RowRule(
                    row_class=fragment(str(sub.iri)), base_class=base, when=when,
                    require=req, axioms=tuple(defs + ax),
                ))
        return tuple(rules)

    def _conditions(self, sub: Any, allowed: set[str]) -> tuple[dict[str, str], list[str]]:
        """`p -> C` for an equivalence `S ≡ R ⊓ ∃p.C ...` whose named parts the row has."""
        for expr in sub.equivalent_to:
            parts = list(expr.Classes) if isinstance(expr, owlready2.And) else [expr]
            when: dict[str, str] = {}
            ok = True
            for part in parts:
                if _named(part) and str(part.iri) in allowed:
                    continue
                if (isinstance(part, owlready2.Restriction) and part.type == owlready2.SOME
                        and _named(part.value)):
                    when[part.property.name] = fragment(str(part.value.iri))
                else:
                    ok = False
            if ok and when:
                return when, [f"{fragment(str(sub.iri))} ≡ {render(expr)}"]
        return {}, []

    def data_rules(self, pack: Pack) -> dict[str, DataRule]:
        out: dict[str, DataRule] = {}
        for key, prop in self.props.items():
            if not isinstance(prop, owlready2.DataPropertyClass):
                continue
            table = key.split(".", 1)[0]
            ranges = list(prop.range)
            axioms = [f"range({prop.name}) = {render(r)}" for r in ranges]
            for c in self._supers(self.row_classes[table]):
                for r in self._only(c):
                    if r.property is prop:
                        ranges.append(r.value)
                        axioms.append(f"{fragment(str(c.iri))} ⊑ {render(r)}")
            out[prop.name] = _data_rule(prop.name, ranges, axioms)
        return out


def _datatype(base: Any) -> str:
    if base is bool:
        return "boolean"
    if base is int:
        return "integer"
    if base is float:
        return "decimal"
    if isinstance(base, type) and issubclass(base, str):
        return "string"
    return "any"


def _data_rule(name: str, ranges: list[Any], axioms: list[str]) -> DataRule:
    fields: dict[str, Any] = {"property": name, "axioms": tuple(axioms)}
    for r in ranges:
        base = r.base_datatype if isinstance(r, owlready2.ConstrainedDatatype) else r
        kind = _datatype(base)
        if kind != "any" and fields.get("datatype") in (None, "any", "decimal"):
            fields["datatype"] = kind
        if isinstance(r, owlready2.ConstrainedDatatype):
            for facet in _FACETS:
                value = getattr(r, facet, None)
                if value is not None:
                    fields[facet] = float(value)
    return DataRule(**fields)

