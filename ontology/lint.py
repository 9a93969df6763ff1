"""Every binding problem of a pack's ontology at once, for `membrane pack check`.

`ontology.pools` raises the first `PackError` it meets, which is right before a batch; an
author fixing a pack wants them all. `binding_problems` checks the same things with the
same messages: each table's `row_class` is a class, each bound column's `property` an
object or data property of the right kind, a text column's range a string.
"""

from __future__ import annotations

import owlready2

from harness.errors import PackError
from harness.pack import Pack
from ontology.load import LoadedOntology
from ontology.pools import _check_text_range, _lookup

__all__ = ["binding_problems"]


def binding_problems(pack: Pack, loaded: LoadedOntology) -> list[PackError]:
    """The binding `PackError`s `ontology.pools` would raise one at a time, all of them."""
    ns = pack.config.ontology.namespace
    toml = pack.root / "pack.toml"
    found: list[PackError] = []
    for table, binding in pack.tables.items():
        cls = _lookup(loaded, ns, binding.row_class)
        if not isinstance(cls, owlready2.ThingClass):
            found.append(PackError(
                f"table {table!r}: row_class <{ns}{binding.row_class}> is not a class of "
                f"{pack.ontology_path.name}",
                file=toml,
                hint="declare the class in the ontology or fix the binding",
            ))
        for column, col in binding.columns.items():
            if col.kind == "id" or col.property is None:
                continue
            prop = _lookup(loaded, ns, col.property)
            want = (owlready2.ObjectPropertyClass if col.kind == "object"
                    else owlready2.DataPropertyClass)
            if not isinstance(prop, want):
                what = "an object" if col.kind == "object" else "a data"
                found.append(PackError(
                    f"column {table}.{column}: property <{ns}{col.property}> is not {what} "
                    f"property of {pack.ontology_path.name}",
                    file=toml,
                    hint="declare the property in the ontology or fix the binding",
                ))
            elif col.kind == "text":
                try:
                    _check_text_range(prop, f"{table}.{column}", toml)
                except PackError as exc:
                    found.append(exc)
    return found
