-- Trials and their arms. Dose ceilings are keyed CHECKs on the drug's canonical name (its
-- preferred label): they hold for "Lipitor®" as much as for "atorvastatin".

CREATE TABLE trials (
    trial_id   VARCHAR PRIMARY KEY,
    title      VARCHAR NOT NULL,
    phase      VARCHAR NOT NULL,
    area       VARCHAR NOT NULL,
    enrolment  INTEGER NOT NULL CHECK (enrolment BETWEEN 1 AND 100000)
);

CREATE TABLE arms (
    trial_id      VARCHAR NOT NULL REFERENCES trials (trial_id),
    arm_id        VARCHAR NOT NULL,
    intervention  VARCHAR NOT NULL,
    route         VARCHAR NOT NULL,
    dose_mg       DOUBLE NOT NULL CHECK (dose_mg > 0),
    CHECK (intervention <> 'atorvastatin' OR dose_mg <= 80),
    CHECK (intervention <> 'rosuvastatin' OR dose_mg <= 40),
    CHECK (intervention <> 'metformin' OR dose_mg <= 2550),
    CHECK (intervention <> 'empagliflozin' OR dose_mg <= 25),
    PRIMARY KEY (trial_id, arm_id)
);
