"""`owl:imports`, read from the parsed graph and resolved to local files, never downloaded.

In order: the pack's import map (`[ontology.imports]`: IRI -> file, or "skip" to go on
without it), an OASIS XML catalog beside the importing file or the pack's ontology
(`catalog-v001.xml`, as Protégé and ROBOT write it), then the naming rule (the file next to
the importing one named as the IRI's last path segment). An import none of these resolves
is a `PackError` naming the IRI and the remedies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pyoxigraph as ox

from harness.errors import PackError
from ontology.catalog import CATALOG_NAME, read_catalog
from ontology.normalise import SkippedImport
from ontology.rdf import ParsedFile, parse_file

__all__ = ["OWL_IMPORTS", "Closure", "Imports", "closure", "declared_imports"]

OWL_IMPORTS = "http://www.w3.org/2002/07/owl#imports"
Imports = Mapping[str, Path | None]  # import IRI -> local file, None: "skip"
_MAX_IMPORTS = 32
_UNMAPPED = Path("\0")


@dataclass
class Closure:
    files: list[ParsedFile] = field(default_factory=list)  # the ontology first, then imports
    iris: list[str] = field(default_factory=list)  # the IRI each file is loaded as
    skipped: list[SkippedImport] = field(default_factory=list)


def declared_imports(f: ParsedFile) -> list[str]:
    return list(dict.fromkeys(t.object.value for t in f.triples
                              if t.predicate.value == OWL_IMPORTS
                              and isinstance(t.object, ox.NamedNode)))


def _mapped(iri: str, imports: Imports) -> Path | None:
    """The pack's import map entry for `iri` (with or without a final / or #): a file, None
    for "skip", `_UNMAPPED` when the map does not name it."""
    for key in (iri, iri.rstrip("/#")):
        for k, v in imports.items():
            if k == key or k.rstrip("/#") == key:
                return v
    return _UNMAPPED


class _Resolver:
    def __init__(self, root: Path, imports: Imports) -> None:
        self.root = root
        self.imports = imports
        self.catalogs: dict[Path, dict[str, str | Path]] = {}

    def catalog(self, folder: Path) -> dict[str, str | Path]:
        if folder not in self.catalogs:
            path = folder / CATALOG_NAME
            self.catalogs[folder] = dict(read_catalog(path)) if path.is_file() else {}
        return self.catalogs[folder]

    def resolve(self, p: Path, iri: str) -> Path | None:
        """The local file of `owl:imports <iri>` in `p`; None when the pack skips it."""
        mapped = _mapped(iri, self.imports)
        if mapped is None or (mapped is not _UNMAPPED and mapped.is_file()):
            return mapped
        if mapped is not _UNMAPPED:
            raise PackError(f"[ontology.imports] maps <{iri}> to a file that does not exist",
                            file=mapped, hint="fix the path (relative to the pack folder)")
        for folder in dict.fromkeys((p.parent, self.root.parent)):
            entry = self.catalog(folder)
            for key in (iri, iri.rstrip("/#")):
                if isinstance(entry.get(key), Path):
                    return Path(entry[key])
        segment = iri.rstrip("/#").rsplit("/", 1)[-1]
        local = p.parent / segment
        if segment and local.is_file():
            if not local.resolve().is_relative_to(p.parent.resolve()):
                raise PackError(
                    f"owl:imports <{iri}> would be read from {segment}, a symbolic link to "
                    "outside the ontology's folder", file=local,
                    hint="replace the link with a copy of the imported ontology, or map the "
                    "IRI in [ontology.imports] to a file inside the pack",
                )
            return local
        raise PackError(
            f"owl:imports <{iri}> cannot be resolved offline: not in the pack's import map, "
            f"not in a {CATALOG_NAME} beside the ontology, and no file next to it named "
            f"{segment or '?'}",
            file=p,
            hint="membrane never downloads ontologies: map the IRI to a local file in "
            f'pack.toml ([ontology.imports] "{iri}" = "ontology/FILE.owl"), list it in '
            f"{CATALOG_NAME}, put the file next to this one named as the last segment of "
            f'the IRI, or go on without it: [ontology.imports] "{iri}" = "skip"',
        )


def closure(path: Path, imports: Imports) -> Closure:
    """The ontology at `path` and every file it (transitively) imports, parsed."""
    if not path.is_file():
        raise PackError("the ontology file does not exist", file=path)
    resolver = _Resolver(path, imports)
    out = Closure()
    todo: list[tuple[Path, str]] = [(path, path.resolve().as_uri())]
    seen: set[Path] = set()
    skipped: list[tuple[str, Path]] = []
    while todo:
        p, iri = todo.pop(0)
        if p.resolve() in seen:
            continue
        seen.add(p.resolve())
        if len(seen) > _MAX_IMPORTS:
            raise PackError(f"more than {_MAX_IMPORTS} imported ontologies", file=path)
        parsed = parse_file(p)
        out.files.append(parsed)
        out.iris.append(iri)
        for imported in declared_imports(parsed):
            target = resolver.resolve(p, imported)
            if target is None:
                skipped.append((imported, p))
            else:
                todo.append((target, imported))
    if skipped:
        bare = _undescribed(out.files)
        out.skipped = [SkippedImport(iri, p, _lost(iri, bare)) for iri, p in skipped]
    return out


def _undescribed(files: list[ParsedFile]) -> list[str]:
    """The IRIs the files use (as predicate or object) but never describe (as subject)."""
    used: set[str] = set()
    described: set[str] = set()
    for f in files:
        for t in f.triples:
            if isinstance(t.subject, ox.NamedNode):
                described.add(t.subject.value)
            used.add(t.predicate.value)
            if isinstance(t.object, ox.NamedNode):
                used.add(t.object.value)
    return sorted(used - described)


def _lost(iri: str, undescribed: list[str]) -> str:
    """What going on without an import loses: its terms the loaded files use but never
    declare (they stay bare IRIs, with none of their axioms)."""
    stem = iri.rstrip("/#")
    bare = [u for u in undescribed if u.startswith(stem) and u != iri]
    if not bare:
        return "all of its axioms; no term of its namespace is used here"
    shown = ", ".join(f"<{b}>" for b in bare[:3])
    return (f"all of its axioms; {len(bare)} term(s) of its namespace are used here "
            f"without their definitions (e.g. {shown})")
