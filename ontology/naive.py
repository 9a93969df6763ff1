"""The naive HermiT path: owlready2's own `sync_reasoner` on a fresh World per call.

Each call loads the base ontology plus the rows into a new `owlready2.World` and runs
owlready2's HermiT (a JVM start and a full serialisation, ~0.6 s). It is the reference
the fast paths are checked against (`tests/effectors/test_value_gate_paths.py`) and the
baseline of `python -m bench value_gate`; the gate never uses it unless told to.
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Sequence
from typing import Any

import owlready2

from harness.errors import InfrastructureError
from ontology.reason import BaseOntology
from ontology.render import RowFacts, render_rows

__all__ = ["OwlreadyReasoner"]


class OwlreadyReasoner:
    """`Reasoner` through `owlready2.sync_reasoner_hermit` (a fresh World and JVM per call)."""

    def __init__(self) -> None:
        self.calls = 0
        self.seconds = 0.0

    def consistent(self, base: BaseOntology, rows: Sequence[RowFacts]) -> bool:
        world = self._reason(base, rows)
        if world is None:
            return False
        world.close()
        return True

    def instances(
        self, base: BaseOntology, rows: Sequence[RowFacts], classes: Sequence[str]
    ) -> dict[str, set[str]] | None:
        world = self._reason(base, rows)
        if world is None:
            return None
        row_iris = {r.iri for r in rows}
        out: dict[str, set[str]] = {}
        try:
            for c in classes:
                cls = world[c]
                found = {str(i.iri) for i in world.search(type=cls)} if cls is not None else set()
                out[c] = found & row_iris
        finally:
            world.close()
        return out

    def _reason(self, base: BaseOntology, rows: Sequence[RowFacts]) -> Any:
        """The reasoned World, or `None` when the ontology is inconsistent."""
        t0 = time.perf_counter()
        self.calls += 1
        world = owlready2.World()
        data = (base.nt + render_rows(rows)).encode("utf-8")
        try:
            onto = world.get_ontology("urn:membrane:naive").load(
                fileobj=io.BytesIO(data), format="ntriples"
            )
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(
                io.StringIO()
            ):
                owlready2.sync_reasoner_hermit(onto, infer_property_values=False, debug=0)
        except owlready2.OwlReadyInconsistentOntologyError:
            world.close()
            return None
        except Exception as exc:
            world.close()
            raise InfrastructureError(f"owlready2's HermiT failed: {exc}") from exc
        finally:
            self.seconds += time.perf_counter() - t0
        return world
