"""The reasoner gate for lessons that would change a pack's ontology (DESIGN.md §8).

A `value_alias` (a spelling -> an individual) or `value_axiom` (N-Triples to add) lesson is
approved only when the pack with the change still loads and classifies (HermiT: consistent,
OWL 2 DL) and **every artifact already committed still passes the value gate** under it. The
change is made to a copy, never to the pack: an approved proposal waits as `pending` for a
person (`membrane learn pending|accept|decline`).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from harness.errors import MembraneError, PackError
from harness.learning.learn_pass import GateDecision
from harness.learning.lessons import LessonProposal
from harness.models import Artifact
from harness.pack import Pack
from harness.ports import Gate, run_gate

__all__ = ["OntologyCheck", "parse_axiom"]

_IRI = r"<[A-Za-z][A-Za-z0-9+.-]*:[^<>\"{}|^`\\\s]+>"  # absolute
_LITERAL = r"\"(?:[^\"\\]|\\.)*\"(?:@[A-Za-z]+(?:-[A-Za-z0-9]+)*|\^\^" + _IRI + ")?"
_BLANK = r"_:[A-Za-z][A-Za-z0-9]*"
_TRIPLE = re.compile(
    rf"^\s*({_IRI}|{_BLANK})\s+({_IRI})\s+({_IRI}|{_BLANK}|{_LITERAL})\s*\.\s*$"
)
_MAX_TRIPLES = 50


def parse_axiom(text: str, tag: str = "lesson") -> list[str]:
    """The axiom's N-Triples lines (full IRIs; blank nodes `_:x` for restrictions, renamed
    `_:<tag>x` so they cannot meet the ontology's own), or ValueError saying which line is
    not one."""
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("the axiom is empty")
    if len(lines) > _MAX_TRIPLES:
        raise ValueError(f"more than {_MAX_TRIPLES} triples")
    out = []
    for i, line in enumerate(lines, 1):
        m = _TRIPLE.match(line)
        if not m:
            raise ValueError(f"line {i} is not an N-Triples triple with full IRIs: {line[:80]!r}")
        terms = [f"_:{tag}{t[2:]}" if t.startswith("_:") else t for t in m.groups()]
        out.append(" ".join(terms) + " .")
    return out


CHECK_CHUNK = 256  # committed artifacts judged (and held) at a time


class OntologyCheck:
    """`ScoreGate(reasoner=OntologyCheck(...))`: see the module docstring.

    `value_gate(pack)` builds a value gate for a (changed) pack; `committed()` gives the
    artifacts committed so far (read when a proposal is checked, not before)."""

    def __init__(
        self,
        pack: Pack,
        cache_dir: Path,
        committed: Callable[[], Iterable[Artifact]],
        value_gate: Callable[[Pack, Path], Gate],
    ) -> None:
        self.pack = pack
        self.cache_dir = cache_dir
        self.committed = committed
        self.value_gate = value_gate

    def __call__(self, p: LessonProposal) -> GateDecision:
        with tempfile.TemporaryDirectory(prefix="membrane-lesson-") as tmp:
            try:
                changed = self._changed_pack(p, Path(tmp))
            except ValueError as exc:
                return GateDecision(False, f"not a valid {p.target}: {exc}")
            try:
                gate = self.value_gate(changed, self.cache_dir)
            except PackError as exc:
                return GateDecision(False, f"the pack with it does not load: {exc.message}")
            failing: list[str] = []
            checked = 0
            try:  # in chunks: at 20,000 committed artifacts one call held them all (issue 22)
                chunk: list[Artifact] = []
                for artifact in self.committed():
                    chunk.append(artifact)
                    if len(chunk) == CHECK_CHUNK:
                        failing += [v.artifact_id for v in run_gate(gate, chunk) if not v.passed]
                        checked, chunk = checked + len(chunk), []
                if chunk:
                    failing += [v.artifact_id for v in run_gate(gate, chunk) if not v.passed]
                    checked += len(chunk)
            finally:
                closer = getattr(gate, "close", None)
                if callable(closer):
                    closer()
        if failing:
            return GateDecision(
                False,
                f"{len(failing)} committed artifact(s) would fail the value gate with it: "
                + ", ".join(failing[:5]),
            )
        return GateDecision(True, f"consistent; all {checked} committed artifact(s) still pass")

    def _changed_pack(self, p: LessonProposal, tmp: Path) -> Pack:
        o = self.pack.config.ontology
        if p.target == "value_alias":
            alias, individual = p.payload["alias"].strip(), p.payload["individual"].strip()
            if not alias or not individual:
                raise ValueError("an alias needs a spelling and an individual")
            taken = o.aliases.get(alias)
            if taken is not None and taken != individual:
                raise ValueError(f"{alias!r} is already an alias of {taken!r}")
            ontology = o.model_copy(update={"aliases": {**o.aliases, alias: individual}})
            config = self.pack.config.model_copy(update={"ontology": ontology})
            return Pack(root=self.pack.root, config=config)
        if p.target == "value_axiom":
            triples = parse_axiom(p.payload["axiom"], tag=f"l{p.key()[:8]}")
            from ontology.load import load_ontology

            try:
                base = load_ontology(self.pack.ontology_path, self.pack.ontology_imports).ntriples()
            except MembraneError as exc:
                raise ValueError(f"the pack's ontology does not load: {exc}") from exc
            path = tmp / "with-lesson.nt"
            path.write_text(base.rstrip("\n") + "\n" + "\n".join(triples) + "\n", "utf-8")
            for extra in self.pack.ontology_path.parent.iterdir():  # local imports, if any
                if extra.is_file() and extra != self.pack.ontology_path:
                    shutil.copy2(extra, tmp / extra.name)
            files = self.pack.config.files.model_copy(update={"ontology": str(path)})
            config = self.pack.config.model_copy(update={"files": files})
            return Pack(root=self.pack.root, config=config)
        raise ValueError(f"{p.target} does not change the ontology")
