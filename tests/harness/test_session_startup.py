"""What opening a session does not pay for until it is needed (issue 16), and what it still
refuses at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from effectors.ri_gate import ddl
from effectors.value_gate import ValueGate
from harness import api
from harness.engines import DeferredProposer
from harness.errors import PackError
from harness.models import Effector as E
from harness.pack import Pack, load_pack
from ontology import load_ontology
from ontology import pools as ontology_pools

ROOT = Path(__file__).resolve().parent.parent.parent
FACILITY = ROOT / "packs" / "facility"

pytestmark = pytest.mark.java


def _pack_copy(tmp_path: Path) -> Pack:
    root = tmp_path / "pack"
    shutil.copytree(FACILITY, root, ignore=shutil.ignore_patterns("corpus"))
    return load_pack(root)


def test_a_spine_is_parsed_once_per_text_and_an_edit_is_judged_again(tmp_path: Path) -> None:
    pack = _pack_copy(tmp_path)
    first = ddl.parse_spine(pack.spine_path)
    assert ddl.parse_spine(pack.spine_path) is first
    text = pack.spine_path.read_text()
    pack.spine_path.write_text(text + "\nCREATE TABLE extra (x INTEGER);\n")
    edited = ddl.parse_spine(pack.spine_path)
    assert edited is not first and "extra" in edited.names
    pack.spine_path.write_text("CREATE TABLE rooms (room_id VARCHAR PRIMARY KEY,, oops);")
    for _ in range(2):  # an error is never remembered
        with pytest.raises(PackError):
            ddl.parse_spine(pack.spine_path)
    pack.spine_path.write_text(text)
    assert ddl.parse_spine(pack.spine_path) == first


def test_a_session_starts_no_reasoner_or_proposer_before_it_needs_one(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    api.init_workspace(ws, str(FACILITY))
    with api.open_session(ws) as first:  # classifies the ontology and caches it
        assert first.engines.gates
    with api.open_session(ws) as s:
        value = s.engines.gates[E.VALUE_GATE]
        assert isinstance(value, ValueGate)
        assert value._runner is None  # no JVM started for it yet
        assert isinstance(s.engines.proposer, DeferredProposer)
        assert s.engines.proposer._built is None
        assert value.runner is value.runner  # made once, on first use
        assert s.engines.proposer.name == "offline"


def test_a_batch_loads_its_ontology_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pack = _pack_copy(tmp_path)
    loads: list[Path] = []
    real = load_ontology

    def counted(path: Path, imports: object = None) -> object:
        loads.append(path)
        return real(path, imports)  # type: ignore[arg-type]

    monkeypatch.setattr(ontology_pools, "load_ontology", counted)
    cache = tmp_path / "cache"
    ontology_pools.check_ontology(pack, cache)  # before the workspace's lock
    ontology_pools.check_ontology(pack, cache)  # as the session opens
    ontology_pools.load_pools(pack, cache)  # classified (a cache miss)
    assert len(loads) == 1
    ontology_pools.load_pools(pack, cache)  # from the cache, read once a process
    ontology_pools.check_ontology(pack, cache)
    assert len(loads) == 1


def test_a_broken_ontology_is_still_refused_after_a_good_one_was_checked(tmp_path: Path) -> None:
    pack = _pack_copy(tmp_path)
    cache = tmp_path / "cache"
    ontology_pools.check_ontology(pack, cache)
    pack.ontology_path.write_text("<rdf:RDF this is not xml")
    with pytest.raises(PackError):
        ontology_pools.check_ontology(pack, cache)


@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("twin", ["fac-0001", "FAC-0001"])
def test_a_batch_refuses_two_artifacts_with_one_id_before_it_writes(
        tmp_path: Path, workers: int, twin: str) -> None:
    """The API's batch (the CLI's corpus reader refuses them per line): the same id twice,
    or ids differing only in case, would start two runs under one run id (an IntegrityError
    from the ledger in one process, a misleading version conflict with workers)."""
    from harness.errors import CorpusError
    from harness.models import Artifact

    ws = tmp_path / "ws"
    api.init_workspace(ws, str(FACILITY))
    lines = (FACILITY / "corpus" / "demo.jsonl").read_text(encoding="utf-8").splitlines()[:3]
    arts = [Artifact.model_validate_json(line) for line in lines]
    again = arts[0].model_copy(update={"id": twin, "prose": arts[0].prose + " Again."})
    with api.open_session(ws) as s:
        with pytest.raises(CorpusError, match="artifact 4 of the batch") as err:
            s.batch([*arts, again], workers=workers)
        assert "artifact 1" in str(err.value) and "unique within a batch" in str(err.value)
        assert s.engines.ledger.count_runs(arts[0].id) == 0  # nothing started
        assert s.batch(arts[:2]).run().runs  # the session is still usable
