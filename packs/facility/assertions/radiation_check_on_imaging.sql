-- code: ri.activity_equipment_kind
-- severity: warn
-- message: task {task_id} ({activity}) is a radiation check on {equipment_id}, a {equipment_type}, which is not imaging equipment
-- table: maintenance
-- columns: activity
-- limit: 50
--
-- Dosimetry calibrations and radiation leakage surveys belong to imaging equipment.
-- A pool-table join ("value within hypernym"): `_pool` holds every member of every
-- ontology class, asserted or inferred, under its IRI fragment and each label. Only a
-- known EquipmentType that is not an ImagingEquipmentType is reported: an unknown or
-- placeholder type is the value gate's finding, not this one's.
SELECT m._artifact, m._row, m.task_id, m.activity, e.equipment_id, e.equipment_type
FROM maintenance AS m
JOIN equipment AS e
    ON e._artifact = m._artifact AND e.equipment_id = m.equipment_id
JOIN _pool AS act
    ON act.class = 'MaintenanceActivity' AND act.name = m.activity
    AND act.individual IN ('dosimetry_calibration', 'radiation_leakage_survey')
JOIN _pool AS kind
    ON kind.class = 'EquipmentType' AND kind.name = e.equipment_type
WHERE NOT EXISTS (
    SELECT 1
    FROM _pool AS img
    WHERE img.class = 'ImagingEquipmentType' AND img.name = e.equipment_type
)
