-- code: ri.price_order
-- severity: error
-- message: {pizza_id} costs {price_eur} EUR {size}, out of order with {others}: a larger size never costs less
-- table: prices
-- columns: price_eur
-- limit: 100
-- A larger size of a pizza never costs less than a smaller one. Either price of such a pair
-- may be the wrong one, so each price of a pair gets a finding (one per price).
WITH pairs AS (
    SELECT a._artifact, a._row AS small_row, b._row AS large_row,
           a.size || ' ' || a.price_eur AS small, b.size || ' ' || b.price_eur AS large
    FROM prices AS a
    JOIN prices AS b ON b._artifact = a._artifact AND b.pizza_id = a.pizza_id
    WHERE list_position(['small', 'medium', 'large'], a.size)
          < list_position(['small', 'medium', 'large'], b.size)
      AND b.price_eur < a.price_eur
), sides AS (
    SELECT _artifact, large_row AS _row, small AS other FROM pairs
    UNION ALL
    SELECT _artifact, small_row AS _row, large AS other FROM pairs
)
SELECT s._artifact, s._row, p.pizza_id, p.size, p.price_eur,
       string_agg(s.other, ', ' ORDER BY s.other) AS others
FROM sides AS s
JOIN prices AS p ON p._artifact = s._artifact AND p._row = s._row
GROUP BY s._artifact, s._row, p.pizza_id, p.size, p.price_eur
