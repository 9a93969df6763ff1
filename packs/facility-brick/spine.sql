-- The register's relational spine: keys and the two foreign keys.
CREATE TABLE spaces (
    space_id   VARCHAR PRIMARY KEY,
    space_type VARCHAR NOT NULL
);
CREATE TABLE equipment (
    equipment_id   VARCHAR PRIMARY KEY,
    space_id       VARCHAR NOT NULL REFERENCES spaces (space_id),
    equipment_type VARCHAR NOT NULL,
    rated_power_kw DOUBLE
);
CREATE TABLE points (
    point_id     VARCHAR PRIMARY KEY,
    equipment_id VARCHAR NOT NULL REFERENCES equipment (equipment_id),
    point_type   VARCHAR NOT NULL
);
