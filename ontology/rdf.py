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


def parse_file(path: Path, base_iri: str | None = None) -> ParsedFile:
    """Parse `path`; a syntax error is a `PackError` naming the file, the line and the syntax."""
    data = path.read_bytes()
    fmt = sniff(data)
    base = base_iri or path.resolve().as_uri()
    if fmt == "OWL/XML":
        return ParsedFile(path, fmt, tuple(_owlxml(path, data, base)))
    rdf_format = ox.RdfFormat.RDF_XML if fmt == "RDF/XML" else ox.RdfFormat.TURTLE
    try:
        triples = tuple(q.triple for q in ox.parse(data, format=rdf_format, base_iri=base,
                                                   rename_blank_nodes=True))
    except SyntaxError as exc:
        raise PackError(
            f"the ontology does not parse as {fmt} (recognised by its content): {exc.msg}",
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
            f"{type(exc).__name__}: {str(exc)[:300]}",
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
