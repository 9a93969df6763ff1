"""HermiT, the reasoner bundled with owlready2, run as a subprocess with a timeout and a heap cap.

owlready2's own `sync_reasoner` serialises the whole World to N-Triples and runs
`org.semanticweb.HermiT.cli.CommandLine` from its bundled jar, without a timeout. We run
the very same jar and class the same way, but on N-Triples *text* we assemble ourselves
(the cached base ontology plus a fragment of rendered rows), so a cohort never has to be
built through the slow object API and no World ever accumulates artifacts.

Two kinds of call:

* `is_consistent(nt)`  -> `-k`: is owl:Thing satisfiable (exit 1 = inconsistent).
* `classify(nt)`       -> `-c -I`: the class hierarchy (direct SubClassOf / EquivalentClasses)
  and the direct named types of every named individual, or `None` if inconsistent.

`Reasoner` is what the value gate asks of *any* HermiT path (this cold one, the warm JVM of
`ontology.warm`, owlready2's own `sync_reasoner` in `ontology.naive`): is a base ontology
plus some rows consistent, and which rows are entailed members of some classes.

A missing `java`, a timeout or any other failure raises `InfrastructureError`: the gate
fails closed and admits nothing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import owlready2

from harness.errors import InfrastructureError
from ontology.render import RowFacts, render_rows

__all__ = ["BaseOntology", "Classification", "HermitRunner", "Reasoner", "java_executable"]

_HERMIT_DIR = Path(owlready2.__file__).resolve().parent / "hermit"
_CLASSPATH = os.pathsep.join([str(_HERMIT_DIR), str(_HERMIT_DIR / "HermiT.jar")])
_MAIN = "org.semanticweb.HermiT.cli.CommandLine"
_AXIOM_RE = re.compile(r"^([A-Za-z]+)\( ((?:<[^>]+>\s*)+)\)$", re.MULTILINE)
_OWL = "http://www.w3.org/2002/07/owl#"
THING = _OWL + "Thing"
NOTHING = _OWL + "Nothing"


def java_executable() -> str:
    """The `java` owlready2 would use, or `InfrastructureError` saying how to get one."""
    exe = str(getattr(owlready2, "JAVA_EXE", "java") or "java")
    found = shutil.which(exe)
    if found is None:
        raise InfrastructureError(
            f"cannot run the HermiT reasoner: no `{exe}` on PATH. Install Java 17 "
            "(e.g. `apt-get install openjdk-17-jre-headless`) or set owlready2.JAVA_EXE."
        )
    return found


@dataclass
class Classification:
    """What `-c -I` printed: direct subsumptions, equivalences and direct individual types."""

    parents: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    equivalents: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    types: dict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    unsatisfiable: set[str] = field(default_factory=set)

    def ancestors(self, cls: str) -> set[str]:
        """Every named class entailed to subsume `cls` (itself and its equivalents included)."""
        seen: set[str] = set()
        stack = [cls]
        while stack:
            c = stack.pop()
            if c in seen:
                continue
            seen.add(c)
            stack.extend(self.parents.get(c, ()))
            stack.extend(self.equivalents.get(c, ()))
        seen.discard(THING)
        return seen

    def individual_types(self, iri: str) -> set[str]:
        out: set[str] = set()
        for direct in self.types.get(iri, ()):
            out |= self.ancestors(direct)
        return out


@dataclass(frozen=True)
class BaseOntology:
    """An ontology as N-Triples text, with a content key (warm reasoners cache it parsed)."""

    nt: str
    key: str = ""

    @staticmethod
    def of(nt: str) -> BaseOntology:
        return BaseOntology(nt, hashlib.sha256(nt.encode("utf-8")).hexdigest())


class Reasoner(Protocol):
    """A HermiT path. `calls`/`seconds` count reasoner calls (metrics, benchmark)."""

    calls: int
    seconds: float

    def consistent(self, base: BaseOntology, rows: Sequence[RowFacts]) -> bool:
        """Is `base` plus `rows` consistent?"""
        ...

    def instances(
        self, base: BaseOntology, rows: Sequence[RowFacts], classes: Sequence[str]
    ) -> dict[str, set[str]] | None:
        """class IRI -> IRIs of the rows entailed to be members; `None` if inconsistent."""
        ...


def parse_classification(text: str) -> Classification:
    result = Classification()
    for relation, iris in _AXIOM_RE.findall(text):
        names = [s.strip("<> ") for s in iris.split("> <")]
        if relation == "SubClassOf" and len(names) == 2:
            result.parents[names[0]].add(names[1])
        elif relation == "Type" and len(names) == 2:
            result.types[names[0]].add(names[1])
        elif relation == "EquivalentClasses":
            if NOTHING in names:
                result.unsatisfiable.update(n for n in names if n != NOTHING)
                continue
            for a in names:
                result.equivalents[a].update(n for n in names if n != a)
    return result


TIMEOUT_ADVICE = ("raise `reasoner_timeout_s` under [ontology] in pack.toml, or give HermiT "
                  "less to do: import only the modules of a large ontology the pack needs")


class ReasonerTimeout(InfrastructureError):
    """HermiT did not answer within the pack's `[ontology] reasoner_timeout_s`."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(f"HermiT did not answer within {timeout_s:g} s; nothing was admitted "
                         f"({TIMEOUT_ADVICE})")


@dataclass
class HermitRunner:
    """Runs the bundled HermiT. Counts its calls and the seconds spent (for metrics/bench)."""

    timeout_s: float = 300.0
    memory_mb: int = 2000
    calls: int = 0
    seconds: float = 0.0

    def is_consistent(self, ntriples: str) -> bool:
        rc, out = self._run(["-k"], ntriples)
        if rc == 0 and "is satisfiable." in out:
            return True
        if _inconsistent(rc, out):
            return False
        raise InfrastructureError(f"HermiT failed (exit {rc}): {_tail(out)}")

    def classify(self, ntriples: str) -> Classification | None:
        """Classify and realise; `None` when the ontology is inconsistent."""
        rc, out = self._run(["-c", "-I"], ntriples)
        if _inconsistent(rc, out):
            return None
        if rc != 0:
            raise InfrastructureError(f"HermiT failed (exit {rc}): {_tail(out)}")
        return parse_classification(out)

    def consistent(self, base: BaseOntology, rows: Sequence[RowFacts]) -> bool:
        return self.is_consistent(base.nt + render_rows(rows))

    def instances(
        self, base: BaseOntology, rows: Sequence[RowFacts], classes: Sequence[str]
    ) -> dict[str, set[str]] | None:
        result = self.classify(base.nt + render_rows(rows))
        if result is None:
            return None
        out: dict[str, set[str]] = {c: set() for c in classes}
        for r in rows:
            for t in result.individual_types(r.iri):
                if t in out:
                    out[t].add(r.iri)
        return out

    def _run(self, args: list[str], ntriples: str) -> tuple[int, str]:
        java = java_executable()
        fd, name = tempfile.mkstemp(prefix="membrane-", suffix=".nt")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(ntriples)
            command = [
                java, f"-Xmx{self.memory_mb}M", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-cp", _CLASSPATH, _MAIN, *args, Path(name).as_uri(),
            ]
            t0 = time.perf_counter()
            try:
                proc = subprocess.run(
                    command, capture_output=True, timeout=self.timeout_s, check=False
                )
            except subprocess.TimeoutExpired as exc:
                raise ReasonerTimeout(self.timeout_s) from exc
            except OSError as exc:
                raise InfrastructureError(f"cannot start HermiT ({java}): {exc}") from exc
            finally:
                self.calls += 1
                self.seconds += time.perf_counter() - t0
        finally:
            Path(name).unlink(missing_ok=True)
        out = proc.stdout.decode("utf-8", "replace") + proc.stderr.decode("utf-8", "replace")
        if "OutOfMemoryError" in out:
            raise InfrastructureError(
                f"HermiT ran out of memory (-Xmx{self.memory_mb}M); judge smaller cohorts"
            )
        return proc.returncode, out


def _inconsistent(rc: int, out: str) -> bool:
    return rc != 0 and "InconsistentOntologyException" in out


def _tail(text: str, n: int = 1500) -> str:
    return text.strip()[-n:]
