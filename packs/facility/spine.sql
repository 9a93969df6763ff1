-- The relational spine of the facility pack. RI_GATE loads admitted values into these
-- tables (in a transient DuckDB) and checks the keys and constraints declared here.

CREATE TABLE rooms (
    room_id     VARCHAR PRIMARY KEY,
    room_type   VARCHAR NOT NULL,
    department  VARCHAR NOT NULL,
    floor       INTEGER NOT NULL CHECK (floor BETWEEN -3 AND 40)
);

CREATE TABLE equipment (
    equipment_id    VARCHAR PRIMARY KEY,
    room_id         VARCHAR NOT NULL REFERENCES rooms (room_id),
    equipment_type  VARCHAR NOT NULL,
    standard        VARCHAR NOT NULL,
    manufacturer    VARCHAR NOT NULL,
    rated_power_kw  DOUBLE NOT NULL CHECK (rated_power_kw > 0)
);

CREATE TABLE maintenance (
    task_id          VARCHAR PRIMARY KEY,
    equipment_id     VARCHAR NOT NULL REFERENCES equipment (equipment_id),
    activity         VARCHAR NOT NULL,
    interval_months  INTEGER NOT NULL CHECK (interval_months BETWEEN 1 AND 120)
);
