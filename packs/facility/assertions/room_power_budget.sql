-- code: ri.room_power_budget
-- severity: error
-- message: room {room_id} draws {total_kw} kW, over its 2000 kW budget
-- table: rooms
-- limit: 50
--
-- Per room, the rated power of the equipment placed in it must not exceed 2000 kW.
-- One violating row per room; `_reject` names every equipment power cell in the sum.
SELECT
    r._artifact,
    r._row,
    r.room_id,
    SUM(e.rated_power_kw) AS total_kw,
    list('equipment[' || e._row || '].rated_power_kw' ORDER BY e._row) AS _reject
FROM rooms AS r
JOIN equipment AS e
    ON e._artifact = r._artifact AND e.room_id = r.room_id
GROUP BY r._artifact, r._row, r.room_id
HAVING SUM(e.rated_power_kw) > 2000
