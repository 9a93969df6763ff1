CREATE TABLE flights (
    flight_id     VARCHAR PRIMARY KEY,
    aircraft      VARCHAR NOT NULL,
    captain       VARCHAR NOT NULL,
    first_officer VARCHAR NOT NULL,
    relief_pilot  VARCHAR NOT NULL,
    cabin_1       VARCHAR NOT NULL,
    cabin_2       VARCHAR NOT NULL,
    cabin_3       VARCHAR NOT NULL,
    cabin_4       VARCHAR NOT NULL
);
