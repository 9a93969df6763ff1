"""Loading a pack's OWL into a fresh owlready2 World, offline, with clear errors.

Every load gets its own `owlready2.World()` (never the default world), so nothing leaks
between packs, tests or artifacts. `owl:imports` are resolved to local files: by the
pack's import map (`[ontology.imports]` in pack.toml: IRI -> file), else to the file next
to the importing one named as the import IRI's last path segment (`.../pizza.owl` ->
`pizza.owl`): membrane never fetches an ontology from the network. A file that does not parse, or an
import that is not there, is a `PackError` naming the file.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import re
from collections.abc import Mapping
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


Imports = Mapping[str, Path]  # import IRI -> local file (`[ontology.imports]` in pack.toml)


def _mapped(iri: str, imports: Imports) -> Path | None:
    """The file the pack's import map gives for `iri` (with or without a final / or #)."""
    for key in (iri, iri.rstrip("/#")):
        for k, v in imports.items():
            if k == key or k.rstrip("/#") == key:
                return v
    return None


def _resolve(p: Path, iri: str, imports: Imports) -> Path:
    """The local file of an `owl:imports <iri>` in `p`: the pack's import map, else the
    file next to `p` named as the IRI's last path segment."""
    mapped = _mapped(iri, imports)
    if mapped is not None:
        if not mapped.is_file():
            raise PackError(f"[ontology.imports] maps <{iri}> to a file that does not exist",
                            file=mapped, hint="fix the path (relative to the pack folder)")
        return mapped
    segment = iri.rstrip("/#").rsplit("/", 1)[-1]
    local = p.parent / segment
    if not segment or not local.is_file():
        raise PackError(
            f"owl:imports <{iri}>, which is not a file next to it ({segment or '?'}) and "
            "not in the pack's import map",
            file=p,
            hint="membrane never downloads ontologies: map the IRI to a local file in "
            f'pack.toml ([ontology.imports] "{iri}" = "ontology/FILE.owl"), or put the file '
            "next to this one, named as the last segment of the IRI",
        )
    return local


def ontology_files(path: Path, imports: Imports | None = None) -> list[Path]:
    """The ontology file followed by every file it (transitively) imports, resolved locally
    (`imports`: the pack's import map, IRI -> file; else the naming rule)."""
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
        todo += [_resolve(p, iri, imports or {}) for iri in _declared_imports(p.read_bytes())]
    return order


def ontology_hash(path: Path, code_version: str = "", imports: Imports | None = None) -> str:
    """sha256 over the bytes of the ontology and its local imports (+ a code version)."""
    h = hashlib.sha256(code_version.encode())
    for p in ontology_files(path, imports):
        h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def load_ontology(path: Path, imports: Imports | None = None) -> LoadedOntology:
    """Parse `path` (RDF/XML, OWL/XML or N-Triples) and its local imports in a fresh World."""
    files = ontology_files(path, imports)
    world = owlready2.World()
    # Imports first (deepest last in `files`), so the main file finds them already loaded.
    for p in reversed(files[1:]):
        iri = _import_iri_for(files, p, imports or {})
        _parse(world, iri, p)
    onto = _parse(world, path.resolve().as_uri(), path)
    return LoadedOntology(path=path, world=world, onto=onto, files=tuple(files))


def _import_iri_for(files: list[Path], target: Path, imports: Imports) -> str:
    for p in files:
        for iri in _declared_imports(p.read_bytes()):
            if _resolve(p, iri, imports) == target:
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
