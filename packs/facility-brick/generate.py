"""Writes the facility-brick demo corpus (corpus/demo.jsonl, corpus/demo.truth.jsonl): twelve
hand-written registers, six clean and six with one defect each that a gate catches.

    python packs/facility-brick/generate.py

Cells name Brick 1.4 classes by label ("Air Handling Unit"), IRI fragment ("Chiller") or
prefixed name ("brick:Exhaust_Fan"); spaces name the site's kinds of space (ontology/site.ttl).
The prose names equipment by its class label ("the chiller"), so PROSE_GATE reads the class
labels of the cells as mentions of those rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _register(
    rid: str,
    spaces: list[tuple[str, str]],
    equipment: list[tuple[str, str, str, float | None]],
    points: list[tuple[str, str, str]],
    prose: str,
) -> dict[str, Any]:
    return {
        "id": rid,
        "tables": {
            "spaces": [{"space_id": s, "space_type": t} for s, t in spaces],
            "equipment": [
                {"equipment_id": e, "space_id": s, "equipment_type": t, "rated_power_kw": kw}
                for e, s, t, kw in equipment
            ],
            "points": [{"point_id": p, "equipment_id": e, "point_type": t} for p, e, t in points],
        },
        "prose": prose,
    }


CLEAN = [
    _register(
        "brick-01",
        [("B1-01", "Plant_Room")],
        [("AHU-1", "B1-01", "Air Handling Unit", 55.0)],
        [
            ("TS-101", "AHU-1", "Supply Air Temperature Sensor"),
            ("TS-102", "AHU-1", "Return Air Temperature Sensor"),
            ("SP-101", "AHU-1", "brick:Supply_Air_Temperature_Setpoint"),
        ],
        "The register covers one air handling unit. AHU-1 is installed in the plant room "
        "B1-01 and is rated at 55 kW. Its points are a supply air temperature sensor, a return "
        "air temperature sensor and a supply air temperature setpoint, all of them points of "
        "AHU-1. The unit is checked before each heating season.",
    ),
    _register(
        "brick-02",
        [("B1-01", "Plant_Room"), ("RF-01", "Roof_Deck")],
        [("CH-1", "B1-01", "Chiller", 350.0), ("CT-1", "RF-01", "Cooling_Tower", 22.0)],
        [
            ("TS-201", "CH-1", "Leaving Chilled Water Temperature Sensor"),
            ("ST-201", "CT-1", "Run Status"),
        ],
        "The cooling plant has two items. The chiller CH-1 sits in the plant room B1-01 and "
        "is rated at 350 kW. The cooling tower CT-1 stands on the roof deck RF-01 and is rated "
        "at 22 kW. A leaving chilled water temperature sensor is a point of CH-1, and a run "
        "status is a point of CT-1.",
    ),
    _register(
        "brick-03",
        [("B1-02", "Boiler_House")],
        [("B-1", "B1-02", "Boiler", 400.0), ("HWP-1", "B1-02", "Hot Water Pump", 7.5)],
        [
            ("TS-301", "B-1", "Leaving Hot Water Temperature Sensor"),
            ("ST-301", "HWP-1", "Pump Status"),
        ],
        "The heating plant is housed in the boiler house B1-02. The boiler B-1 is rated at "
        "400 kW and the hot water pump HWP-1 at 7.5 kW. B-1 carries a leaving hot water "
        "temperature sensor, and a pump status is a point of HWP-1.",
    ),
    _register(
        "brick-04",
        [("L3-DH", "Data_Hall")],
        [
            ("CRAC-1", "L3-DH", "Computer Room Air Conditioning", 30.0),
            ("CRAC-2", "L3-DH", "Computer Room Air Conditioning", 30.0),
        ],
        [
            ("TS-401", "CRAC-1", "Return Air Temperature Sensor"),
            ("TS-402", "CRAC-2", "Return Air Temperature Sensor"),
        ],
        "The data hall L3-DH is cooled by two computer room air conditioning units, CRAC-1 "
        "and CRAC-2, each rated at 30 kW. A return air temperature sensor is a point of "
        "CRAC-1 and another is a point of CRAC-2.",
    ),
    _register(
        "brick-05",
        [("L2-OF", "Office_Floor"), ("RF-01", "Roof_Deck")],
        [
            ("EF-1", "RF-01", "brick:Exhaust_Fan", 4.0),
            ("VAV-201", "L2-OF", "Variable Air Volume Box", 0.5),
        ],
        [("ST-501", "EF-1", "Fan Status"), ("TS-501", "VAV-201", "Zone Air Temperature Sensor")],
        "The office floor L2-OF is served by the variable air volume box VAV-201, rated at "
        "0.5 kW, which carries a zone air temperature sensor. The exhaust fan EF-1 stands on "
        "the roof deck RF-01; it is rated at 4 kW and its fan status is a point of EF-1.",
    ),
    _register(
        "brick-06",
        [("G-05", "LV_Switch_Room")],
        [("TX-1", "G-05", "Transformer", 800.0)],
        [("ST-601", "TX-1", "On Off Status")],
        "The switch room G-05 holds the transformer TX-1, rated at 800 kW. Its on off status "
        "is a point of TX-1 and is read by the building operators every shift.",
    ),
]

# (register, the defect injected, the gate that catches it)
DEFECTS: list[tuple[dict[str, Any], str, str, str]] = [
    (
        _register(
            "brick-07",
            [("B1-01", "Plant_Room")],
            [("AHU-2", "B1-01", "Air Handling Unit", 45.0)],
            [("TS-701", "AHU-2", "Supply Air Temperature Sensor"), ("TS-702", "AHU-2", "Chiller")],
            "AHU-2 is an air handling unit in the plant room B1-01, rated at 45 kW. It carries a "
            "supply air temperature sensor among its points.",
        ),
        "value.outside_root",
        "points[1].point_type",
        "an equipment class (brick:Chiller) in the point_type column (root brick:Point)",
    ),
    (
        _register(
            "brick-08",
            [("B1-01", "Plant_Room")],
            [("AHU-3", "B1-01", "Air Handlng Unit", 60.0)],
            [("TS-801", "AHU-3", "Supply Air Temperature Sensor")],
            "AHU-3 is installed in the plant room B1-01 and is rated at 60 kW. A supply air "
            "temperature sensor is a point of AHU-3.",
        ),
        "value.unknown",
        "equipment[0].equipment_type",
        "a misspelt class ('Air Handlng Unit'): no Brick class has that name",
    ),
    (
        _register(
            "brick-09",
            [("B1-02", "Boiler_House")],
            [("B-2", "B1-02", "Boiler", 300.0)],
            [("TS-901", "B-2", "Supply Water Temperature Sensor")],
            "The boiler B-2 in the boiler house B1-02 is rated at 300 kW. B-2 carries one "
            "temperature sensor on its water side.",
        ),
        "value.deprecated",
        "points[0].point_type",
        "brick:Supply_Water_Temperature_Sensor, deprecated in Brick 1.3 "
        "(isReplacedBy brick:Leaving_Water_Temperature_Sensor)",
    ),
    (
        _register(
            "brick-10",
            [("B1-02", "Boiler_House")],
            [("HWP-2", "B1-02", "Hot Water Pump", 250.0)],
            [("ST-1001", "HWP-2", "Pump Status")],
            "The hot water pump HWP-2 is housed in the boiler house B1-02, and a pump status is "
            "a point of HWP-2.",
        ),
        "value.shape",
        "equipment[0].rated_power_kw",
        "a pump rated at 250 kW: shapes/register.ttl allows a brick:Pump 100 kW at most",
    ),
    (
        _register(
            "brick-11",
            [("B1-01", "Plant_Room")],
            [("AHU-4", "B1-01", "Air Handling Unit", 40.0)],
            [
                ("TS-1101", "AHU-4", "Supply Air Temperature Sensor"),
                ("TS-1102", "AHU-9", "Return Air Temperature Sensor"),
            ],
            "AHU-4 is an air handling unit in the plant room B1-01, rated at 40 kW.",
        ),
        "ri.fk_orphan",
        "points[1].equipment_id",
        "a point of AHU-9, which is not in the register",
    ),
    (
        _register(
            "brick-12",
            [("B1-01", "Plant_Room")],
            [("CH-2", "B1-01", "Chiller", 350.0)],
            [("TS-1201", "CH-2", "Leaving Chilled Water Temperature Sensor")],
            "The plant room B1-01 holds one chiller. The chiller is rated at 450 kW. Its leaving "
            "chilled water temperature sensor is a point of CH-2.",
        ),
        "prose.value_mismatch",
        "prose",
        "the prose gives the chiller (named by its class label only) 450 kW; the cell holds 350",
    ),
]


def main() -> None:
    out = HERE / "corpus"
    out.mkdir(exist_ok=True)
    artifacts = [*CLEAN, *(a for a, _, _, _ in DEFECTS)]
    with (out / "demo.jsonl").open("w", encoding="utf-8") as f:
        for a in artifacts:
            f.write(json.dumps(a, ensure_ascii=False) + "\n")
    with (out / "demo.truth.jsonl").open("w", encoding="utf-8") as f:
        for a, code, where, what in DEFECTS:
            f.write(
                json.dumps(
                    {"id": a["id"], "code": code, "where": where, "what": what}, ensure_ascii=False
                )
                + "\n"
            )


if __name__ == "__main__":
    main()
