"""Loading a pack's OWL into a fresh owlready2 World, offline, with clear errors.

Every load gets its own `owlready2.World()` (never the default world), so nothing leaks
between packs, tests or artifacts. `owl:imports` are resolved to files next to the
ontology (by the import IRI's last path segment, e.g. `.../pizza.owl` -> `pizza.owl`):
membrane never fetches an ontology from the network. A file that does not parse, or an
import that is not there, is a `PackError` naming the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import owlready2

from harness.errors import PackError

__all__ = ["LoadedOntology", "load_ontology", "ontology_files", "ontology_hash"]

_IMPORT_RES = (
    re.compile(rb"imports\s+rdf:resource\s*=\s*[\"']([^\"']+)[\"']"),
    re.compile(rb"<http://www\.w3\.org/2002/07/owl#imports>\s*<([^>]+)>"),
    re.compile(rb"<Import>\s*([^<\s]+)\s*</Import>"),
    re.compile(rb"owl:imports\s+<([^>]+)>"),
)
_MAX_IMPORTS = 32


@dataclass
class LoadedOntology:
    """A parsed ontology (and its local imports) in its own World."""

    path: Path
    world: Any  # owlready2.World (untyped library)
    onto: Any  # owlready2.Ontology
    files: tuple[Path, ...]

    def ntriples(self) -> str:
        """The whole World as N-Triples, `owl:imports` dropped (the imports are inside)."""
        imports = self.world._abbreviate("http://www.w3.org/2002/07/owl#imports")

        def keep(_graph: object, _s: object, p: object, _o: object, _d: object) -> bool:
            return bool(p != imports)

        buf = io.BytesIO()
        self.world.save(buf, format="ntriples", filter=keep)
        return buf.getvalue().decode("utf-8")


def _declared_imports(data: bytes) -> list[str]:
    found: list[str] = []
    for rx in _IMPORT_RES:
        found += [m.decode("utf-8", "replace") for m in rx.findall(data)]
    return list(dict.fromkeys(found))


def ontology_files(path: Path) -> list[Path]:
    """The ontology file followed by every file it (transitively) imports, resolved locally."""
    order: list[Path] = []
    todo = [path]
    while todo:
        p = todo.pop(0)
        if p in order:
            continue
        if not p.is_file():
            raise PackError("the ontology file does not exist", file=p)
        order.append(p)
        if len(order) > _MAX_IMPORTS:
            raise PackError(f"more than {_MAX_IMPORTS} imported ontologies", file=path)
        for iri in _declared_imports(p.read_bytes()):
            segment = iri.rstrip("/#").rsplit("/", 1)[-1]
            local = p.parent / segment
            if not segment or not local.is_file():
                raise PackError(
                    f"owl:imports <{iri}>, which is not a file next to it ({segment or '?'})",
                    file=p,
                    hint="membrane never downloads ontologies: put the imported file in the "
                    "same folder, named as the last segment of the import IRI",
                )
            todo.append(local)
    return order


def ontology_hash(path: Path, code_version: str = "") -> str:
    """sha256 over the bytes of the ontology and its local imports (+ a code version)."""
    h = hashlib.sha256(code_version.encode())
    for p in ontology_files(path):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def load_ontology(path: Path) -> LoadedOntology:
    """Parse `path` (RDF/XML, OWL/XML or N-Triples) and its local imports in a fresh World."""
    files = ontology_files(path)
    world = owlready2.World()
    # Imports first (deepest last in `files`), so the main file finds them already loaded.
    for p in reversed(files[1:]):
        iri = _import_iri_for(files, p)
        _parse(world, iri, p)
    onto = _parse(world, path.resolve().as_uri(), path)
    return LoadedOntology(path=path, world=world, onto=onto, files=tuple(files))


def _import_iri_for(files: list[Path], target: Path) -> str:
    for p in files:
        for iri in _declared_imports(p.read_bytes()):
            if iri.rstrip("/#").rsplit("/", 1)[-1] == target.name:
                return iri
    return target.resolve().as_uri()


def _parse(world: Any, iri: str, path: Path) -> Any:
    try:
        # owlready2 prints the parser's traceback itself before raising; the PackError below
        # says what matters, so keep stderr clean
        with path.open("rb") as fh, contextlib.redirect_stderr(io.StringIO()):
            return world.get_ontology(iri).load(fileobj=fh)
    except PackError:
        raise
    except Exception as exc:
        raise PackError(
            f"the ontology does not parse: {type(exc).__name__}: {str(exc)[:300]}",
            file=path,
            hint="check it opens in Protégé (RDF/XML, OWL/XML or N-Triples)",
        ) from exc
