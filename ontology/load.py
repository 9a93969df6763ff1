"""Loading a pack's OWL into a fresh owlready2 World, offline, with clear errors.

Every file is parsed by a spec-conformant RDF parser (`ontology.rdf`: RDF/XML, Turtle,
N-Triples, OWL/XML), normalised to what owlready2 and HermiT take (`ontology.normalise`:
what they cannot take is set aside and reported), and handed to owlready2 as N-Triples.
The IRIs owlready2 then holds are checked against the parser's: a divergence is a
`PackError` naming the IRI and the file.

Every load gets its own `owlready2.World()` (never the default world), so nothing leaks
between packs, tests or artifacts. `owl:imports` (read from the parsed graph) are resolved
to local files (`ontology.imports`); membrane never fetches an ontology from the network.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import logging
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import owlready2
import pyoxigraph as ox

from harness.errors import PackError
from ontology.catalog import CATALOG_NAME
from ontology.imports import OWL_IMPORTS, Imports, closure
from ontology.normalise import IntakeReport, normalise, short
from ontology.rdf import Triple, to_ntriples

__all__ = ["Imports", "LoadedOntology", "load_ontology", "ontology_files", "ontology_hash"]

_log = logging.getLogger(__name__)
_LOGGED: set[tuple[str, Path]] = set()  # skipped imports already logged
_FILES: dict[tuple[Path, tuple[tuple[str, str], ...]],
             tuple[tuple[Path, tuple[tuple[int, int] | None, ...]], ...]] = {}
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
_RDF_TYPE = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"


@dataclass
class LoadedOntology:
    """A parsed ontology (and its local imports) in its own World."""

    path: Path
    world: Any  # owlready2.World (untyped library)
    onto: Any  # owlready2.Ontology
    files: tuple[Path, ...]
    report: IntakeReport = field(default_factory=IntakeReport)

    def ntriples(self) -> str:
        """The whole World as N-Triples, `owl:imports` dropped (the imports are inside)."""
        imports = self.world._abbreviate(OWL_IMPORTS)

        def keep(_graph: object, _s: object, p: object, _o: object, _d: object) -> bool:
            return bool(p != imports)

        buf = io.BytesIO()
        self.world.save(buf, format="ntriples", filter=keep)
        return buf.getvalue().decode("utf-8")


def ontology_files(path: Path, imports: Imports | None = None) -> list[Path]:
    """The ontology file followed by every file it (transitively) imports, resolved locally
    (`imports`: the pack's import map, IRI -> file or None for "skip"; else an XML catalog
    beside the ontology, else the naming rule).

    Finding the imports parses every file (~0.2 s for Brick's 2 MB of Turtle), so the list
    is remembered for the process while no file of it, and no catalog beside one, changed
    (size and mtime): the cache key of a classified ontology costs one parse a process."""
    key = (path.resolve(), tuple(sorted((k, str(v)) for k, v in (imports or {}).items())))
    hit = _FILES.get(key)
    if hit is not None and all(_stamp(p) == stamp for p, stamp in hit):
        return [p for p, _ in hit]
    files = [f.path for f in closure(path, imports or {}).files]
    _FILES[key] = tuple((p, _stamp(p)) for p in files)
    return files


def _stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """(size, mtime) of a file and of the XML catalog beside it (None when absent)."""
    out: list[tuple[int, int] | None] = []
    for p in (path, path.parent / CATALOG_NAME):
        try:
            st = p.stat()
        except OSError:
            out.append(None)
        else:
            out.append((st.st_size, st.st_mtime_ns))
    return tuple(out)


def ontology_hash(path: Path, code_version: str = "", imports: Imports | None = None) -> str:
    """sha256 over the bytes of the ontology and its local imports (+ a code version)."""
    h = hashlib.sha256(code_version.encode())
    for p in ontology_files(path, imports):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def load_ontology(path: Path, imports: Imports | None = None) -> LoadedOntology:
    """Parse `path` and its local imports, normalise them and load them in a fresh World."""
    found = closure(path, imports or {})
    kept, report = normalise(found.files)
    report = IntakeReport(report.files, report.kept, report.set_aside, tuple(found.skipped))
    for s in report.skipped:
        if (s.iri, s.importer) in _LOGGED:
            continue  # once a process: pack check and a batch load the ontology more than once
        _LOGGED.add((s.iri, s.importer))
        _log.warning("owl:imports <%s> in %s skipped ([ontology.imports] \"skip\"): %s",
                     s.iri, s.importer, s.lost)
    world = owlready2.World()
    onto: Any = None
    # Imports first (deepest last), so the main file finds them already loaded.
    for f, iri, triples in reversed(list(zip(found.files, found.iris, kept, strict=True))):
        onto = _parse(world, iri, f.path, triples)
    _check_iris(world, found.files[0].path, found.iris, kept)
    return LoadedOntology(path=path, world=world, onto=onto,
                          files=tuple(f.path for f in found.files), report=report)


def _parse(world: Any, iri: str, path: Path, triples: list[Triple]) -> Any:
    body = [t for t in triples if t.predicate.value != OWL_IMPORTS]  # resolved already
    entity = ""
    try:
        # owlready2 prints the parser's traceback itself before raising; keep stderr clean
        with contextlib.redirect_stderr(io.StringIO()):
            onto = world.get_ontology(iri).load(fileobj=io.BytesIO(to_ntriples(body)),
                                                format="ntriples")
            # owlready2 builds an entity's Python class when it is first used: build each now,
            # so an IRI it cannot hold fails here, named, with the file
            for entity in sorted({t.subject.value for t in body if t.predicate.value == _RDF_TYPE
                                  and isinstance(t.subject, ox.NamedNode)}):
                world[entity]
            return onto
    except Exception as exc:
        raise PackError(
            f"owlready2 cannot hold this ontology: {type(exc).__name__}: {str(exc)[:200]}"
            + _suspects(body, entity),
            file=path,
            hint="the RDF parses; owlready2 refuses an IRI given incompatible kinds (class, "
            "property, individual): give each its own IRI, or remove the extra rdf:type "
            "triples named here",
        ) from exc


def _suspects(triples: list[Triple], entity: str) -> str:
    """The rdf:type triples of the IRI owlready2 failed on (else of IRIs typed both as a
    property and as something else)."""
    kinds: dict[str, list[str]] = {}
    for t in triples:
        if t.predicate.value == _RDF_TYPE and isinstance(t.object, ox.NamedNode):
            kinds.setdefault(str(t.subject), []).append(short(t.object))
    mixed = [(s, ks) for s, ks in kinds.items() if s == f"<{entity}>"] or [
        (s, ks) for s, ks in kinds.items() if len(ks) > 1 and any(k.endswith("Property")
                                                                  for k in ks)]
    if not mixed:
        return ""
    shown = "; ".join(f"{s} rdf:type {', '.join(ks)}" for s, ks in mixed[:3])
    return f" (triples: {shown})"


@cache
def _preloaded() -> frozenset[str]:
    """The IRIs an empty owlready2 World already holds."""
    w = owlready2.World()
    return frozenset(r[0] for r in w.graph.execute("SELECT iri FROM resources"))


def _check_iris(world: Any, root: Path, iris: list[str], kept: list[list[Triple]]) -> None:
    """Every IRI the parser read is in owlready2's World, and owlready2 made up none."""
    parsed: set[str] = set(iris)
    for triples in kept:
        for t in triples:
            if t.predicate.value == OWL_IMPORTS:  # not handed to owlready2
                continue
            for term in (t.subject, t.predicate, t.object):
                if isinstance(term, ox.NamedNode):
                    parsed.add(term.value)
                elif isinstance(term, ox.Literal) and term.datatype.value not in (
                        _XSD_STRING, _LANG_STRING):
                    parsed.add(term.datatype.value)
    held = {r[0] for r in world.graph.execute("SELECT iri FROM resources")}
    missing = sorted(parsed - held)
    extra = sorted(held - parsed - _preloaded())
    if missing or extra:
        iri, what = (missing[0], "is in the file but not in owlready2's World") if missing \
            else (extra[0], "is in owlready2's World but in no triple of the file")
        raise PackError(
            f"owlready2 holds the ontology's IRIs differently from the RDF parser: <{iri}> "
            f"{what} ({len(missing)} missing, {len(extra)} made up)",
            file=root,
            hint="this is an owlready2 defect for this IRI's spelling: report it with the "
            "file; meanwhile rename the IRI (percent-encode unusual characters)",
        )
