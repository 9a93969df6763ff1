"""Generate the facility pack's OWL ontology and its flawed demo corpus.

    python packs/facility/generate.py owl --out packs/facility/ontology/facility.owl
    python packs/facility/generate.py corpus --seed 7 --count 240 --out packs/facility/corpus
    python packs/facility/generate.py references --out packs/facility/references

Standalone: stdlib plus `harness.pools.normalize_label`; the domain spec is `domain.py`.
Output is deterministic (a seeded `random.Random`, sorted iteration, no hash order).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from xml.sax.saxutils import escape

sys.path.insert(0, str(Path(__file__).resolve().parent))

import domain as d  # noqa: E402

_XSD = "http://www.w3.org/2001/XMLSchema#"


def _attr(text: str) -> str:
    return escape(text, {'"': "&quot;"})


def _all_disjoint(classes: list[str] | tuple[str, ...]) -> list[str]:
    out = ["  <owl:AllDisjointClasses>", '    <owl:members rdf:parseType="Collection">']
    out += [f'      <owl:Class rdf:about="#{c}"/>' for c in classes]
    out += ["    </owl:members>", "  </owl:AllDisjointClasses>"]
    return out


def _all_values(prop: str, cls: str) -> list[str]:
    return [
        "    <rdfs:subClassOf>",
        "      <owl:Restriction>",
        f'        <owl:onProperty rdf:resource="#{prop}"/>',
        f'        <owl:allValuesFrom rdf:resource="#{cls}"/>',
        "      </owl:Restriction>",
        "    </rdfs:subClassOf>",
    ]


def _class(name: str, comment: str, parent: str | None = None) -> list[str]:
    out = [f'  <owl:Class rdf:about="#{name}">', f"    <rdfs:comment>{escape(comment)}</rdfs:comment>"]
    if parent:
        out.append(f'    <rdfs:subClassOf rdf:resource="#{parent}"/>')
    if name in d.ROW_CLASSES:
        for prop, (row_cls, range_cls) in sorted(d.OBJECT_PROPERTIES.items()):
            if row_cls == name:
                out += _all_values(prop, range_cls)
    out.append("  </owl:Class>")
    return out


def _defined_row_class(domain: str) -> list[str]:
    row = d.DOMAIN_ROW_CLASSES[domain]
    etype = d.DOMAIN_SUBCLASSES["EquipmentType"][domain]
    out = [
        f'  <owl:Class rdf:about="#{row}">',
        f"    <rdfs:comment>An equipment row whose equipment type is a {domain} equipment "
        "type; its standard and manufacturer must be of the same domain.</rdfs:comment>",
        "    <owl:equivalentClass>",
        "      <owl:Class>",
        '        <owl:intersectionOf rdf:parseType="Collection">',
        '          <owl:Class rdf:about="#EquipmentRow"/>',
        "          <owl:Restriction>",
        '            <owl:onProperty rdf:resource="#hasEquipmentType"/>',
        f'            <owl:someValuesFrom rdf:resource="#{etype}"/>',
        "          </owl:Restriction>",
        "        </owl:intersectionOf>",
        "      </owl:Class>",
        "    </owl:equivalentClass>",
    ]
    out += _all_values("hasStandard", d.DOMAIN_SUBCLASSES["Standard"][domain])
    out += _all_values("hasManufacturer", d.DOMAIN_SUBCLASSES["Manufacturer"][domain])
    out.append("  </owl:Class>")
    return out


def _data_property(name: str, row_cls: str, dtype: str, facets: list[tuple[str, str]]) -> list[str]:
    out = [
        f'  <owl:DatatypeProperty rdf:about="#{name}">',
        f'    <rdf:type rdf:resource="{d.OWL}FunctionalProperty"/>',
        f'    <rdfs:domain rdf:resource="#{row_cls}"/>',
        "    <rdfs:range>",
        "      <rdfs:Datatype>",
        f'        <owl:onDatatype rdf:resource="{_XSD}{dtype}"/>',
        '        <owl:withRestrictions rdf:parseType="Collection">',
    ]
    for facet, value in facets:
        out += [
            "          <rdf:Description>",
            f'            <xsd:{facet} rdf:datatype="{_XSD}{dtype}">{value}</xsd:{facet}>',
            "          </rdf:Description>",
        ]
    out += ["        </owl:withRestrictions>", "      </rdfs:Datatype>", "    </rdfs:range>"]
    out.append("  </owl:DatatypeProperty>")
    return out


def _individual(ind: d.Individual) -> list[str]:
    out = [
        f'  <owl:NamedIndividual rdf:about="#{ind.name}">',
        f'    <rdf:type rdf:resource="#{ind.cls}"/>',
        f"    <rdfs:label>{escape(ind.label)}</rdfs:label>",
    ]
    out += [f"    <skos:altLabel>{escape(alt)}</skos:altLabel>" for alt in ind.alt]
    out.append("  </owl:NamedIndividual>")
    return out


def render_owl() -> str:
    """The ontology as RDF/XML; the same spec always gives the same bytes."""
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        "<rdf:RDF",
        f'    xmlns="{d.NAMESPACE}"',
        f'    xml:base="{d.ONTOLOGY_IRI}"',
        '    xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"',
        '    xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"',
        f'    xmlns:owl="{d.OWL}"',
        f'    xmlns:xsd="{_XSD}"',
        f'    xmlns:skos="{d.SKOS}">',
        f'  <owl:Ontology rdf:about="{d.ONTOLOGY_IRI}">',
        "    <rdfs:comment>Facility equipment register (membrane example pack): rooms, "
        "equipment and maintenance rows, and the pools of their values. Generated by "
        "packs/facility/generate.py; do not edit by hand.</rdfs:comment>",
        "  </owl:Ontology>",
        f'  <owl:AnnotationProperty rdf:about="{d.SKOS}altLabel"/>',
    ]
    for cls in d.ROW_CLASSES:
        out += _class(cls, f"A row of the {cls.removesuffix('Row').lower()} table.")
    for cls in d.VALUE_CLASSES:
        out += _class(cls, f"The pool of {cls} values.")
    for parent, subs in d.DOMAIN_SUBCLASSES.items():
        for domain, sub in subs.items():
            out += _class(sub, f"A {parent} of the {domain} domain.", parent)
    for domain in d.DOMAINS:
        out += _defined_row_class(domain)
    out += _all_disjoint(d.ROW_CLASSES + d.VALUE_CLASSES)
    for subs in d.DOMAIN_SUBCLASSES.values():
        out += _all_disjoint([subs[x] for x in d.DOMAINS])
    for prop, (row_cls, range_cls) in d.OBJECT_PROPERTIES.items():
        out += [
            f'  <owl:ObjectProperty rdf:about="#{prop}">',
            f'    <rdf:type rdf:resource="{d.OWL}FunctionalProperty"/>',
            f'    <rdfs:domain rdf:resource="#{row_cls}"/>',
            f'    <rdfs:range rdf:resource="#{range_cls}"/>',
            "  </owl:ObjectProperty>",
        ]
    for prop, (row_cls, dtype, facets) in d.DATA_PROPERTIES.items():
        out += _data_property(prop, row_cls, dtype, facets)
    for ind in d.INDIVIDUALS:
        out += _individual(ind)
    out += ["  <owl:AllDifferent>", '    <owl:distinctMembers rdf:parseType="Collection">']
    out += [f'      <owl:NamedIndividual rdf:about="#{i.name}"/>' for i in d.INDIVIDUALS]
    out += ["    </owl:distinctMembers>", "  </owl:AllDifferent>", "</rdf:RDF>", ""]
    return "\n".join(out)


def build_corpus(seed: int, count: int) -> dict[str, str]:
    raise NotImplementedError


def build_references(seed: int) -> dict[str, str]:
    raise NotImplementedError


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    sub = parser.add_subparsers(dest="command", required=True)
    p_owl = sub.add_parser("owl", help="write the OWL ontology (RDF/XML)")
    p_owl.add_argument("--out", type=Path, required=True)
    p_corpus = sub.add_parser("corpus", help="write demo.jsonl, demo.clean.jsonl, demo.truth.jsonl")
    p_corpus.add_argument("--seed", type=int, default=7)
    p_corpus.add_argument("--count", type=int, default=240)
    p_corpus.add_argument("--out", type=Path, required=True)
    p_refs = sub.add_parser("references", help="write the reference prose samples")
    p_refs.add_argument("--seed", type=int, default=1013)
    p_refs.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "owl":
        _write(args.out, render_owl())
    elif args.command == "corpus":
        for name, text in build_corpus(args.seed, args.count).items():
            _write(args.out / name, text)
    else:
        for name, text in build_references(args.seed).items():
            _write(args.out / name, text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
