"""The critique effector: report assembly, the spine, and the locked-cell check."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from effectors.critique import build_report, check_locked, parse_cell_ref
from harness.models import Artifact, CellRef, Critique, Location, Spine, Verdict
from tests.effectors.test_prose_gate import make_artifact

ART = make_artifact()


def ref(table: str, row: int, column: str) -> CellRef:
    return CellRef(table=table, row=row, column=column)


def crit(code: str, severity: str = "error", **loc: object) -> Critique:
    return Critique.model_validate(
        {"code": code, "gate": code.split(".", maxsplit=1)[0] + "_gate", "severity": severity,
         "location": loc}
    )


def test_report_carries_the_failed_gates_findings_sorted() -> None:
    passed = Verdict(gate="value_gate", artifact_id=ART.id,
                     critiques=(crit("value.note", "warn"),))
    failed = Verdict(
        gate="ri_gate",
        artifact_id=ART.id,
        critiques=(
            crit("ri.not_null", table="equipment", row=1, column="manufacturer"),
            crit("ri.check", "warn", table="rooms", row=0, column="floor"),
            crit("ri.fk_orphan", table="equipment", row=0, column="room_id"),
            crit("ri.info", "info"),
        ),
        rejected=(ref("equipment", 1, "room_id"),),
    )
    report = build_report([passed, failed], ART, attempt=3)
    assert report.gate == "ri_gate" and report.attempt == 3
    assert [c.code for c in report.critiques] == ["ri.fk_orphan", "ri.not_null", "ri.check"]
    locked = set(report.spine.locked)
    assert {"equipment[0].room_id", "equipment[1].manufacturer", "equipment[1].room_id"} \
        .isdisjoint(locked)
    assert "rooms[0].floor" in locked  # a warn does not unlock its cell
    assert len(locked) == len(ART.cells()) - 3
    assert report.spine.locked["equipment[0].standard"] == "IEC 60601-1"


def test_report_is_independent_of_verdict_and_critique_order() -> None:
    cs = (crit("value.disjoint", table="equipment", row=0, column="standard"),
          crit("value.disjoint", table="equipment", row=1, column="standard"),
          crit("value.unknown", table="rooms", row=1, column="room_type"))
    a = build_report([Verdict(gate="value_gate", artifact_id=ART.id, critiques=cs)], ART, 2)
    b = build_report([Verdict(gate="value_gate", artifact_id=ART.id, critiques=cs[::-1])], ART, 2)
    assert a == b


def test_rejected_cells_are_unlocked_even_without_a_critique() -> None:
    v = Verdict(gate="value_gate", artifact_id=ART.id, rejected=(ref("rooms", 0, "department"),),
                critiques=(crit("value.unsat"),))
    assert "rooms[0].department" not in build_report([v], ART, 2).spine.locked


def test_row_level_errors_unlock_only_what_the_gate_rejected() -> None:
    v = Verdict(gate="ri_gate", artifact_id=ART.id,
                critiques=(crit("ri.room_power_budget", table="rooms", row=0),),
                rejected=(ref("equipment", 0, "rated_power_kw"),))
    locked = build_report([v], ART, 2).spine.locked
    assert "rooms[0].floor" in locked and "equipment[0].rated_power_kw" not in locked
    assert len(locked) == len(ART.cells()) - 1


def test_prose_findings_lock_every_cell() -> None:
    v = Verdict(gate="prose_gate", artifact_id=ART.id,
                critiques=(Critique(code="prose.truncated", gate="prose_gate",
                                    location=Location(span=(3, 9))),))
    report = build_report([v], ART, 4)
    assert report.gate == "prose_gate"
    assert report.spine == Spine.of(ART, set())


def test_a_crashed_gate_admits_nothing() -> None:
    v = Verdict(gate="value_gate", artifact_id=ART.id, crashed=True,
                critiques=(crit("gate.crashed"),))
    report = build_report([v], ART, 2)
    assert report.spine.locked == {} and [c.code for c in report.critiques] == ["gate.crashed"]


def test_other_artifacts_verdicts_are_ignored() -> None:
    other = Verdict(gate="value_gate", artifact_id="someone-else", crashed=True)
    ok = Verdict(gate="value_gate", artifact_id=ART.id)
    report = build_report([other, ok], ART, 2)
    assert report.spine == Spine.of(ART, set()) and report.critiques == ()


# -- check_locked ----------------------------------------------------------------------


def test_unchanged_proposal_passes() -> None:
    spine = Spine.of(ART, set())
    assert check_locked(spine, ART) == []
    assert check_locked(spine, ART.model_copy(update={"prose": "new prose."})) == []


def test_changed_and_dropped_locked_cells_are_flagged() -> None:
    spine = Spine.of(ART, {ref("equipment", 0, "standard")})
    tables = {t: [dict(r) for r in rows] for t, rows in ART.tables.items()}
    tables["equipment"][0]["standard"] = "ASHRAE 170"  # not locked: fine
    tables["equipment"][1]["manufacturer"] = "Siemens Healthineers"  # locked: changed
    del tables["rooms"][1]["floor"]  # locked: dropped
    tables["maintenance"].pop()  # two locked... four locked cells dropped with the row
    found = check_locked(spine, Artifact(id=ART.id, tables=tables))
    assert {c.code for c in found} == {"proposal.locked_cell"}
    assert {c.gate for c in found} == {"harness"}
    cells = [str(c.location.cell()) for c in found]
    assert cells == sorted(cells)
    assert set(cells) == {"equipment[1].manufacturer", "rooms[1].floor", "maintenance[1].task_id",
                          "maintenance[1].equipment_id", "maintenance[1].activity",
                          "maintenance[1].interval_months"}
    changed = next(c for c in found if c.location.column == "manufacturer")
    assert (changed.observed, changed.expected) == ("Siemens Healthineers", "Carrier")


def test_a_locked_cell_keeps_its_value_and_its_type() -> None:
    spine = Spine(locked={"rooms[0].floor": 1})
    def with_floor(v: object) -> Artifact:
        rooms = [dict(ART.tables["rooms"][0], floor=v)]
        return Artifact.model_validate({"id": "a", "tables": {"rooms": rooms}})
    assert check_locked(spine, with_floor(1)) == []
    assert len(check_locked(spine, with_floor(1.0))) == 1  # issue 17: 1.0 is not the locked 1
    assert len(check_locked(spine, with_floor(True))) == 1
    assert len(check_locked(spine, with_floor("1"))) == 1


@given(table=st.from_regex(r"[a-z_][a-z0-9_]{0,12}", fullmatch=True),
       row=st.integers(0, 10_000),
       column=st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True))
def test_cell_keys_round_trip(table: str, row: int, column: str) -> None:
    r = CellRef(table=table, row=row, column=column)
    assert parse_cell_ref(str(r)) == r


def test_unparseable_locked_key_is_flagged_not_ignored() -> None:
    found = check_locked(Spine(locked={"nonsense": 1}), ART)
    assert [c.code for c in found] == ["proposal.locked_cell"]


def test_a_locked_int_returned_as_a_float_is_a_change() -> None:
    """Issue 17 item 10: `"floor": 0.0` for a locked `0` was committed."""
    art = make_artifact()
    spine = Spine.of(art, set())
    rows = [dict(r) for r in art.tables["rooms"]]
    rows[0]["floor"] = float(rows[0]["floor"])
    floated = art.model_copy(update={"tables": {**art.tables, "rooms": rows}})
    breaches = check_locked(spine, floated)
    assert [c.location.column for c in breaches] == ["floor"]
    assert check_locked(spine, art) == []


def test_the_spine_leaves_open_references_only_the_value_gate_has_seen() -> None:
    """A foreign key the value gate does not judge stays open until the RI gate admits it."""
    from effectors.critique import Critic
    from harness.pack import load_pack
    from tests.conftest import FACILITY

    critic = Critic(load_pack(FACILITY))
    art = make_artifact(equipment_0_standard="ASHRAE 62.1")
    crit = Critique(code="value.disjoint", gate="value_gate",
                    location=Location(table="equipment", row=0, column="standard"))
    value = Verdict(gate="value_gate", artifact_id=art.id, critiques=(crit,))
    spine = critic.report([value], art, 1).spine.locked
    assert "equipment[0].room_id" not in spine and "maintenance[0].equipment_id" not in spine
    assert "equipment[0].equipment_id" in spine  # keys stay locked
    ri = Verdict(gate="ri_gate", artifact_id=art.id)
    passed = Verdict(gate="value_gate", artifact_id=art.id)
    after_ri = critic.report([passed, ri], art, 2).spine.locked
    assert "equipment[0].room_id" in after_ri
    assert "equipment[0].room_id" in build_report([value], art, 1).spine.locked  # no pack
