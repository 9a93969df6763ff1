-- The relational spine of a pizzeria menu. Object cells hold canonical labels after VALUE_GATE.
CREATE TABLE pizzas (
    pizza_id VARCHAR PRIMARY KEY,
    name     VARCHAR NOT NULL,
    recipe   VARCHAR NOT NULL,
    diet     VARCHAR NOT NULL
);

-- one base per pizza (pizza:hasBase is functional): `crust` is the till's name for it
CREATE TABLE bases (
    pizza_id VARCHAR PRIMARY KEY REFERENCES pizzas (pizza_id),
    base     VARCHAR NOT NULL,
    crust    VARCHAR NOT NULL
);

CREATE TABLE toppings (
    topping_id VARCHAR PRIMARY KEY,
    pizza_id   VARCHAR NOT NULL REFERENCES pizzas (pizza_id),
    topping    VARCHAR NOT NULL
);

CREATE TABLE prices (
    pizza_id  VARCHAR NOT NULL REFERENCES pizzas (pizza_id),
    size      VARCHAR NOT NULL CHECK (size IN ('small', 'medium', 'large')),
    price_eur DECIMAL(6, 2) NOT NULL CHECK (price_eur > 0),
    PRIMARY KEY (pizza_id, size)
);
