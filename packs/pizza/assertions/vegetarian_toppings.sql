-- code: ri.vegetarian_topping
-- severity: error
-- message: {pizza_id} is marked vegetarian but has {topping} (a {kind} in the Pizza ontology)
-- table: toppings
-- columns: topping
-- limit: 100
-- A topping of a pizza marked vegetarian that the Pizza ontology entails is a MeatTopping or a
-- FishTopping (_pool holds the classes HermiT infers: ham is a HamTopping, so a MeatTopping).
-- The pizza's diet is flagged too (vegetarian_label.sql): either may be the wrong one. A
-- topping the ontology does not know is VALUE_GATE's (value.unknown), not this check's.
SELECT t._artifact, t._row, p.pizza_id, t.topping, min(m.class) AS kind
FROM toppings AS t
JOIN pizzas AS p ON p._artifact = t._artifact AND p.pizza_id = t.pizza_id
JOIN _pool AS d ON d.class = 'VegetarianDiet' AND d.name = p.diet
JOIN _pool AS m ON m.class IN ('MeatTopping', 'FishTopping') AND m.name = t.topping
GROUP BY t._artifact, t._row, p.pizza_id, t.topping
