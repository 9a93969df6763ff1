-- code: ri.vegetarian_label
-- severity: error
-- message: {pizza_id} is marked vegetarian but has {n} meat or fish topping(s): {toppings}
-- table: pizzas
-- columns: diet
-- limit: 100
-- The other side of vegetarian_toppings.sql: the pizza whose diet says vegetarian while the
-- Pizza ontology entails one of its toppings is a MeatTopping or a FishTopping.
SELECT p._artifact, p._row, p.pizza_id, count(DISTINCT t._row) AS n,
       string_agg(DISTINCT t.topping, ', ' ORDER BY t.topping) AS toppings
FROM pizzas AS p
JOIN _pool AS d ON d.class = 'VegetarianDiet' AND d.name = p.diet
JOIN toppings AS t ON t._artifact = p._artifact AND t.pizza_id = p.pizza_id
JOIN _pool AS m ON m.class IN ('MeatTopping', 'FishTopping') AND m.name = t.topping
GROUP BY p._artifact, p._row, p.pizza_id
