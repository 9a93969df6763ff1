"""An OASIS XML catalog (`catalog-v001.xml`, as Protégé and ROBOT write it) beside an
ontology: import IRI -> local file.

Read with the standard library's expat, refusing any DOCTYPE or entity declaration (no
entity expansion, no external resources), as defusedxml would. `<uri name= uri=>` entries
(also inside `<group>`, with `xml:base`) are honoured; a target must be a file in the
catalog's folder or below it, never a URL.
"""

from __future__ import annotations

import xml.parsers.expat
from pathlib import Path
from urllib.parse import unquote, urlparse

from harness.errors import PackError

__all__ = ["CATALOG_NAME", "read_catalog"]

CATALOG_NAME = "catalog-v001.xml"
_NS = "urn:oasis:names:tc:entity:xmlns:xml:catalog"
_BASE = "http://www.w3.org/XML/1998/namespace base"


def read_catalog(path: Path) -> dict[str, Path]:
    """The `<uri>` entries of the catalog at `path` (IRI -> file). A catalog that does not
    parse, declares a DOCTYPE or an entity, or names a file outside its folder is a `PackError`."""
    folder = path.parent.resolve()
    entries: dict[str, Path] = {}
    bases: list[str] = [""]
    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")

    def refuse(*_args: object) -> None:
        raise PackError("the XML catalog declares a DOCTYPE or an entity, which membrane "
                        "does not read", file=path, line=parser.CurrentLineNumber,
                        hint="remove the <!DOCTYPE ...> (a catalog needs none)")

    def start(name: str, attrs: dict[str, str]) -> None:
        bases.append(attrs.get(_BASE, bases[-1]))
        if name == f"{_NS} uri" and "name" in attrs and "uri" in attrs:
            entries[attrs["name"]] = _target(path, folder, bases[-1], attrs["uri"],
                                             parser.CurrentLineNumber)

    def end(_name: str) -> None:
        bases.pop()

    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    try:
        parser.Parse(path.read_bytes(), True)
    except xml.parsers.expat.ExpatError as exc:
        raise PackError(f"the XML catalog does not parse: {exc}", file=path, line=exc.lineno,
                        hint="fix the XML, or delete the catalog and use [ontology.imports]"
                        ) from exc
    return entries


def _target(path: Path, folder: Path, base: str, uri: str, line: int) -> Path:
    try:
        ref = urlparse(uri)
    except ValueError as exc:  # "http://[x": an IPv6 host that is none
        raise PackError(f"the XML catalog maps an import to {uri!r}, which is no URI",
                        file=path, line=line, hint="fix that uri= attribute") from exc
    if ref.scheme not in ("", "file"):
        raise PackError(f"the XML catalog maps an import to {uri!r}, which is not a local file",
                        file=path, line=line,
                        hint="membrane never downloads: point it at a file beside the catalog")
    rel = unquote(ref.path)
    target = (Path(rel) if ref.scheme == "file" else folder / unquote(base) / rel).resolve()
    if not target.is_relative_to(folder) or not target.is_file():
        raise PackError(f"the XML catalog maps an import to {uri!r}: no such file in the "
                        "catalog's folder", file=path, line=line,
                        hint="catalog targets are files in the catalog's folder or below it")
    return target
