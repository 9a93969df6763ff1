-- code: ri.unmaintained_equipment
-- severity: warn
-- message: equipment {equipment_id} has no maintenance task
-- table: equipment
-- columns: equipment_id
-- limit: 50
--
-- Every equipment row should have at least one maintenance task (same artifact).
SELECT e._artifact, e._row, e.equipment_id
FROM equipment AS e
WHERE NOT EXISTS (
    SELECT 1
    FROM maintenance AS m
    WHERE m._artifact = e._artifact AND m.equipment_id = e.equipment_id
)
