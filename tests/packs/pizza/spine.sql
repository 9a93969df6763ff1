CREATE TABLE pizzas (
    pizza_id    VARCHAR PRIMARY KEY,
    style       VARCHAR NOT NULL,
    base        VARCHAR NOT NULL,
    topping     VARCHAR NOT NULL,
    diameter_cm INTEGER NOT NULL,
    -- a keyed CHECK on a canonical value: every spelling of the deep pan base reaches it
    CHECK (base <> 'deep pan base' OR diameter_cm <= 35)
);
