"""Classifying a base ontology (once per content hash) in the warm JVM, not through HermiT's CLI.

`HermitRunner.classify` runs owlready2's HermiT command line with `-c -I`. Its `-I` prints
the direct types of every named individual by calling `getTypes(individual, direct=true)`
once per individual, and each call walks the class hierarchy again: on Brick 1.4 (2,290
named individuals, 1,445 of them classes punned by a property value) that loop alone costs
~9 s of CPU, against ~0.7 s for the classification and ~0.6 s for the realisation it reads.

`WarmClassifier.classify` gives the same `Classification` (the same `SubClassOf` /
`EquivalentClasses` text from HermiT's own `dumpHierarchies`, then the same direct types)
from the warm in-process HermiT of `ontology.warm`: the realisation is computed once and
read per class with `getInstances(class, direct=true)`, one call per class instead of per
individual. No JVM start per call either; the parsed base is kept by the warm reasoner, so
a value gate in the same process does not parse it again.

`default_classifier()` returns it when the warm path is available, else the cold
`HermitRunner` (same jar, same answers, slower).
"""

from __future__ import annotations

from typing import Any

from ontology.reason import (
    THING,
    BaseOntology,
    Classification,
    HermitRunner,
    java_executable,
    parse_classification,
)
from ontology.warm import WarmHermit, warm_available

__all__ = ["WarmClassifier", "default_classifier"]


class WarmClassifier(HermitRunner):
    """A `HermitRunner` whose `classify` runs in the warm JVM (the other calls stay cold)."""

    def __init__(self, timeout_s: float = 300.0, memory_mb: int = 2000) -> None:
        super().__init__(timeout_s=timeout_s, memory_mb=memory_mb)
        self._hermit = WarmHermit(timeout_s, memory_mb)

    def classify(self, ntriples: str) -> Classification | None:
        """Classify and realise; `None` when the ontology is inconsistent."""
        import jpype

        hermit = self._hermit
        writer = jpype.JClass("java.io.StringWriter")
        printer = jpype.JClass("java.io.PrintWriter")
        inference = jpype.JClass("org.semanticweb.owlapi.reasoner.InferenceType")

        def ask(reasoner: Any) -> Classification | None:
            if not reasoner.isConsistent():
                return None
            reasoner.precomputeInferences(inference.CLASS_HIERARCHY, inference.CLASS_ASSERTIONS)
            out = writer()
            pw = printer(out)
            # what the CLI prints for `-c` (classes only, no property values)
            reasoner.dumpHierarchies(pw, True, False, False)
            pw.flush()
            result = parse_classification(str(out.toString()))
            factory = reasoner.getRootOntology().getOWLOntologyManager().getOWLDataFactory()
            classes = [factory.getOWLThing(), *reasoner.getRootOntology().getClassesInSignature()]
            for cls in classes:
                name = str(cls.getIRI().toString())
                if name != THING and name in result.unsatisfiable:
                    continue  # no instances, and HermiT answers for owl:Nothing
                for ind in reasoner.getInstances(cls, True).getFlattened():
                    result.types[str(ind.getIRI().toString())].add(name)
            return result

        calls, seconds = hermit.calls, hermit.seconds
        try:
            answer: Classification | None = hermit._call(BaseOntology.of(ntriples), (), ask)
        finally:
            self.calls += hermit.calls - calls
            self.seconds += hermit.seconds - seconds
        return answer


def default_classifier(timeout_s: float = 300.0, memory_mb: int = 2000) -> HermitRunner:
    """`WarmClassifier` when JPype and a JVM are there, else the cold `HermitRunner`. No
    `java` on PATH is the cold path's clear `InfrastructureError` either way."""
    java_executable()
    if warm_available():
        return WarmClassifier(timeout_s, memory_mb)
    return HermitRunner(timeout_s=timeout_s, memory_mb=memory_mb)
