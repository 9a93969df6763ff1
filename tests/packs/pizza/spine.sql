CREATE TABLE pizzas (
    pizza_id    VARCHAR PRIMARY KEY,
    style       VARCHAR NOT NULL,
    base        VARCHAR NOT NULL,
    topping     VARCHAR NOT NULL,
    diameter_cm INTEGER NOT NULL
);
