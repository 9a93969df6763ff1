"""Reading one ontology file into RDF triples with a spec-conformant parser.

RDF/XML, Turtle and N-Triples are read by pyoxigraph (Oxigraph's parsers: spec-conformant,
and fast: Pizza's 4,179 triples in ~12 ms). owlready2's own RDF/XML reader resolves `rdf:ID="X"`
against an `xml:base` ending in `#` to `…##X`, so class axioms and the individuals typed by
them no longer meet; here every file reaches owlready2 as N-Triples. rdflib reads the same
formats in pure Python, more slowly, and adds nothing here. Neither reads OWL/XML, which is no RDF syntax:
OWL/XML is mapped to triples by owlready2's OWL/XML reader (its IRIs are written out in
`IRI`/`abbreviatedIRI` elements, so the `xml:base` idiom above cannot occur), then treated as
any other file.

The format is recognised by content first (an XML document is RDF/XML, or OWL/XML when its
root is `Ontology` in the OWL namespace; anything else is Turtle, of which N-Triples is a
subset), the extension only naming the file in errors.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyoxigraph as ox

from harness.errors import PackError
from harness.pack import redact_excerpts

__all__ = ["ParsedFile", "Term", "Triple", "nt_term", "parse_file", "to_ntriples"]

Term = ox.NamedNode | ox.BlankNode | ox.Literal
Triple = ox.Triple
_OWL_XML_ROOT = re.compile(rb"<(?:[A-Za-z_][\w.-]*:)?Ontology[\s>]")
_XML_START = re.compile(rb"^\s*(?:<\?xml|<!--|<!DOCTYPE|<[A-Za-z_][\w.-]*(?::[\w.-]+)?[\s/>])")


@dataclass(frozen=True)
class ParsedFile:
    """The triples of one file, in the order the parser gave them."""

    path: Path
    format: str  # "RDF/XML", "Turtle", "OWL/XML"
    triples: tuple[Triple, ...]


def sniff(data: bytes) -> str:
    """The file's syntax, by content: "RDF/XML", "OWL/XML" or "Turtle"."""
    head = data[:4096].lstrip(b"\xef\xbb\xbf")
    if not _XML_START.match(head):
        return "Turtle"
    # the first element after the prolog, comments and DOCTYPE decides
    body = re.sub(rb"<\?.*?\?>|<!--.*?-->|<!DOCTYPE[^\[>]*(\[.*?\])?\s*>", b"", head, flags=re.S)
    m = re.search(rb"<([A-Za-z_][\w.:-]*)", body)
    if m and _OWL_XML_ROOT.match(b"<" + m.group(1) + b" ") and b"www.w3.org/2002/07/owl#" in head:
        return "OWL/XML"
    return "RDF/XML"


_DOCTYPE = re.compile(rb"<!DOCTYPE\s+[^\s\[>]+\s*")
_DECL = re.compile(
    rb"""(?:<!--.*?-->|<\?.*?\?>|<!ENTITY\s+(%\s+)?([^\s>]+)\s+(?:"([^"]*)"|'([^']*)'|"""
    rb"""(SYSTEM|PUBLIC)\b[^>]*)\s*>|<!(?:ELEMENT|ATTLIST|NOTATION)\b(?:"[^"]*"|'[^']*'|[^>"'])*>)""",
    re.S)
_SPACE = re.compile(rb"\s*")
MAX_ENTITY_EXPANSION = 64 * 1024 * 1024  # bytes the entity references of one file may add


def check_doctype(path: Path, data: bytes) -> None:
    """Refuse what an XML DOCTYPE could make a parser fetch or expand without bound.

    Allowed: internal general entities with literal values, the `&owl;` abbreviations
    Protégé writes. Refused (a `PackError` with the line): an external DTD or entity
    (`SYSTEM`/`PUBLIC`: never resolved), a parameter entity, an entity whose value refers
    to another entity (the nesting of "billion laughs"), and references that would expand
    the file by more than `MAX_ENTITY_EXPANSION` bytes in all."""
    m = _DOCTYPE.search(data)
    if m is None:
        return

    def refuse(at: int, what: str) -> PackError:
        return PackError(f"the ontology's DOCTYPE {what}, which membrane does not read",
                         file=path, line=data.count(b"\n", 0, at) + 1,
                         hint="keep only plain <!ENTITY name \"text\"> abbreviations (as "
                         "Protégé writes them), or save the ontology again without a DOCTYPE")

    pos = m.end()
    if data[pos:pos + 1] != b"[":
        raise refuse(m.start(), "names an external DTD")
    pos += 1
    values: dict[bytes, int] = {}
    while True:
        pos = _SPACE.match(data, pos).end()  # type: ignore[union-attr]  # always matches
        d = _DECL.match(data, pos)
        if d is None:
            if re.match(rb"\s*\]\s*>", data[pos:pos + 64]):
                break
            raise refuse(pos, "holds a declaration that cannot be read")
        if d.group(1):
            raise refuse(d.start(), "declares a parameter entity")
        if d.group(5):
            raise refuse(d.start(), f"declares an external entity ({d.group(5).decode()})")
        if d.group(2) is not None:
            value = d.group(3) if d.group(3) is not None else d.group(4) or b""
            if b"&" in value or b"%" in value:
                raise refuse(d.start(), "declares an entity that refers to other entities")
            values[d.group(2)] = len(value)
        pos = d.end()
    grown = sum(n * data.count(b"&" + name + b";", pos) for name, n in values.items())
    if grown > MAX_ENTITY_EXPANSION:
        raise refuse(m.start(), f"expands its entities to {grown:,} bytes (more than "
                     f"{MAX_ENTITY_EXPANSION:,})")


def parse_file(path: Path, base_iri: str | None = None) -> ParsedFile:
    """Parse `path`; a syntax error is a `PackError` naming the file, the line and the syntax.
    An XML file's DOCTYPE is checked first (`check_doctype`)."""
    data = path.read_bytes()
    fmt = sniff(data)
    if fmt != "Turtle":
        check_doctype(path, data)
    base = base_iri or path.resolve().as_uri()
    if fmt == "OWL/XML":
        return ParsedFile(path, fmt, tuple(_owlxml(path, data, base)))
    rdf_format = ox.RdfFormat.RDF_XML if fmt == "RDF/XML" else ox.RdfFormat.TURTLE
    try:
        triples = tuple(q.triple for q in ox.parse(data, format=rdf_format, base_iri=base,
                                                   rename_blank_nodes=True))
    except SyntaxError as exc:
        raise PackError(
            f"the ontology does not parse as {fmt} (recognised by its content): "
            f"{redact_excerpts(exc.msg, data.decode('utf-8', 'replace'))}",
            file=path, line=exc.lineno,
            hint="membrane reads RDF/XML, Turtle, N-Triples and OWL/XML; fix the syntax there "
            "(the line is the parser's), or export the ontology again from Protégé",
        ) from exc
    return ParsedFile(path, fmt, triples)


def _owlxml(path: Path, data: bytes, base: str) -> list[Triple]:
    from owlready2 import owlxml_2_ntriples

    out: list[Triple] = []
    blanks: dict[str, ox.BlankNode] = {}

    def node(v: str) -> ox.NamedNode | ox.BlankNode:
        if v.startswith("_"):
            return blanks.setdefault(v, ox.BlankNode())
        return ox.NamedNode(v)

    def obj(s: str, p: str, o: str) -> None:
        out.append(ox.Triple(node(s), ox.NamedNode(p), node(o)))

    def lit(s: str, p: str, o: object, d: str) -> None:
        if d.startswith("@"):
            value = ox.Literal(str(o), language=d[1:])
        else:
            value = ox.Literal(str(o), datatype=ox.NamedNode(d) if d else None)
        out.append(ox.Triple(node(s), ox.NamedNode(p), value))

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            owlxml_2_ntriples.parse(io.BytesIO(data), obj, lit, None, base)
    except Exception as exc:
        raise PackError(
            f"the ontology does not parse as OWL/XML (recognised by its content): "
            f"{type(exc).__name__}: "
            f"{redact_excerpts(str(exc)[:300], data.decode('utf-8', 'replace'))}",
            file=path,
            hint="fix the XML there, or save the ontology as RDF/XML or Turtle from Protégé",
        ) from exc
    return out


def nt_term(t: object) -> str:
    """A term as N-Triples writes it (`str` of a pyoxigraph term)."""
    return str(t)


def to_ntriples(triples: Iterable[Triple]) -> bytes:
    """Canonical N-Triples (one triple a line, UTF-8), what owlready2 is handed."""
    out = ox.serialize(triples, format=ox.RdfFormat.N_TRIPLES)
    return out if out is not None else b""
