-- One table of wines; every descriptor is an enumerated value of the ontology.
CREATE TABLE wines (
    wine_id  VARCHAR PRIMARY KEY,
    name     VARCHAR NOT NULL,
    colour   VARCHAR NOT NULL,
    body     VARCHAR NOT NULL,
    flavour  VARCHAR NOT NULL,
    sugar    VARCHAR NOT NULL,
    grape    VARCHAR NOT NULL,
    maker    VARCHAR NOT NULL,
    region   VARCHAR NOT NULL
);
