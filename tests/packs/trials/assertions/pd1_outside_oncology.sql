-- code: ri.pd1_outside_oncology
-- severity: error
-- message: arm {arm_id} of trial {trial_id} gives {intervention}, a PD-1 inhibitor, in a {area} trial
-- table: arms
-- columns: intervention
-- limit: 50
--
-- PD-1 inhibitors are trialled in oncology only (in this registry). A pool join: `_pool`
-- holds every member of PD1Inhibitor under each of its names, and the arm's cell holds the
-- canonical form, so one join covers "Keytruda", "KEYTRUDA®" and "pembrolizumab".
SELECT a._artifact, a._row, a.trial_id, a.arm_id, a.intervention, t.area
FROM arms AS a
JOIN trials AS t ON t._artifact = a._artifact AND t.trial_id = a.trial_id
JOIN _pool AS p ON p.class = 'PD1Inhibitor' AND p.name = a.intervention
WHERE t.area <> 'oncology'
