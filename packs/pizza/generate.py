"""Generate the pizza pack's extension ontology, its flawed demo corpus and its references.

    python packs/pizza/generate.py owl --out packs/pizza/ontology/pizza_menu.owl
    python packs/pizza/generate.py corpus --seed 11 --count 120 --out packs/pizza/corpus
    python packs/pizza/generate.py references --out packs/pizza/references

The value ontology is the Manchester Pizza ontology (ontology/third-party/pizza.owl, unmodified,
CC BY 3.0, see its NOTICE); the extension ontology written here imports it and declares only the
row layer: row classes, the columns' properties, and the pool individuals. Toppings and bases
are typed with Pizza's own classes, so Pizza's hierarchy and disjointness judge them (ham is a
HamTopping, so a MeatTopping; a deep pan base is no thin and crispy one, and no topping).
Recipes are individuals of our own VegetarianRecipe / NonVegetarianRecipe, each with
`rdfs:seeAlso` its Pizza class (typed with Pizza's NamedPizza classes, HermiT realises their
existential toppings: a plain classification took 56 s with all 21 recipes, 7 s with none, on a
loaded 2-core VM); tests/test_pizza_pack.py checks that the split agrees with what HermiT infers
from Pizza's closure axioms (its VegetarianPizza).
Stdlib only; output is deterministic (one seeded `random.Random` per artifact).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from xml.sax.saxutils import escape

NS = "http://membrane.dev/packs/pizza#"
PZ_IRI = "https://raw.githubusercontent.com/owlcs/pizza-ontology/refs/heads/master/pizza.owl"
PZ = PZ_IRI + "#"

# topping individual -> (Pizza class, label, other labels)
TOPPINGS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "anchovies": ("AnchoviesTopping", "anchovies", ()),
    "artichoke": ("ArtichokeTopping", "artichoke", ("artichokes",)),
    "asparagus": ("AsparagusTopping", "asparagus", ()),
    "cajun_spice": ("CajunSpiceTopping", "cajun spice", ()),
    "capers": ("CaperTopping", "capers", ()),
    "chicken": ("ChickenTopping", "chicken", ()),
    "four_cheeses": ("FourCheesesTopping", "four cheeses", ("quattro formaggi topping",)),
    "garlic": ("GarlicTopping", "garlic", ()),
    "goats_cheese": ("GoatsCheeseTopping", "goats cheese", ("goat's cheese",)),
    "gorgonzola": ("GorgonzolaTopping", "gorgonzola", ()),
    "green_pepper": ("GreenPepperTopping", "green pepper", ()),
    "ham": ("HamTopping", "ham", ()),
    "hot_green_pepper": ("HotGreenPepperTopping", "hot green pepper", ()),
    "hot_spiced_beef": ("HotSpicedBeefTopping", "hot spiced beef", ()),
    "jalapeno": ("JalapenoPepperTopping", "jalapeno pepper", ("jalapeños", "jalapenos")),
    "leek": ("LeekTopping", "leek", ("leeks",)),
    "mixed_seafood": ("MixedSeafoodTopping", "mixed seafood", ("frutti di mare topping",)),
    "mozzarella": ("MozzarellaTopping", "mozzarella", ("fior di latte",)),
    "mushrooms": ("MushroomTopping", "mushrooms", ("funghi",)),
    "olives": ("OliveTopping", "olives", ()),
    "onion": ("OnionTopping", "onion", ()),
    "parma_ham": ("ParmaHamTopping", "parma ham", ("prosciutto di parma",)),
    "parmesan": ("ParmesanTopping", "parmesan", ("parmigiano",)),
    "peperonata": ("PeperonataTopping", "peperonata", ()),
    "pepperoni": ("PeperoniSausageTopping", "pepperoni sausage", ("pepperoni",)),
    "petits_pois": ("PetitPoisTopping", "petits pois", ()),
    "pine_kernels": ("PineKernels", "pine kernels", ("pine nuts",)),
    "prawns": ("PrawnsTopping", "prawns", ()),
    "red_onion": ("RedOnionTopping", "red onion", ()),
    "rocket": ("RocketTopping", "rocket", ("arugula",)),
    "rosemary": ("RosemaryTopping", "rosemary", ()),
    "sliced_tomato": ("SlicedTomatoTopping", "sliced tomato", ()),
    "spinach": ("SpinachTopping", "spinach", ()),
    "sultanas": ("SultanaTopping", "sultanas", ()),
    "sundried_tomato": ("SundriedTomatoTopping", "sundried tomato", ("sun-dried tomato",)),
    "sweet_pepper": ("SweetPepperTopping", "sweet pepper", ()),
    "tabasco": ("TobascoPepperSauce", "tabasco sauce", ()),
    "tomato": ("TomatoTopping", "tomato", ("tomato sauce",)),
}

# recipe individual -> (Pizza class, label, its toppings: Pizza's someValuesFrom, hand-checked).
# (Pizza's Mushroom is left out: its label would read as the topping "mushrooms" in prose.)
RECIPES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "american": ("American", "American", ("tomato", "mozzarella", "pepperoni")),
    "american_hot": ("AmericanHot", "American Hot",
                     ("tomato", "mozzarella", "pepperoni", "hot_green_pepper", "jalapeno")),
    "cajun": ("Cajun", "Cajun", ("tomato", "mozzarella", "onion", "peperonata", "prawns",
                                 "tabasco")),
    "capricciosa": ("Capricciosa", "Capricciosa", ("tomato", "mozzarella", "ham", "olives",
                                                   "anchovies", "peperonata", "capers")),
    "caprina": ("Caprina", "Caprina", ("tomato", "mozzarella", "sundried_tomato",
                                       "goats_cheese")),
    "fiorentina": ("Fiorentina", "Fiorentina", ("tomato", "mozzarella", "garlic", "olives",
                                                "parmesan", "spinach")),
    "four_seasons": ("FourSeasons", "Four Seasons", ("tomato", "mozzarella", "mushrooms",
                                                     "pepperoni", "olives", "anchovies",
                                                     "capers")),
    "frutti_di_mare": ("FruttiDiMare", "Frutti di Mare", ("tomato", "garlic", "mixed_seafood")),
    "giardiniera": ("Giardiniera", "Giardiniera", ("tomato", "mozzarella", "mushrooms", "olives",
                                                   "sliced_tomato", "peperonata", "petits_pois",
                                                   "leek")),
    "la_reine": ("LaReine", "La Reine", ("tomato", "mozzarella", "mushrooms", "ham", "olives")),
    "margherita": ("Margherita", "Margherita", ("tomato", "mozzarella")),
    "napoletana": ("Napoletana", "Napoletana", ("tomato", "mozzarella", "olives", "anchovies",
                                                "capers")),
    "parmense": ("Parmense", "Parmense", ("tomato", "mozzarella", "ham", "parmesan",
                                          "asparagus")),
    "pollo_ad_astra": ("PolloAdAstra", "Pollo ad Astra", ("tomato", "mozzarella", "chicken",
                                                          "red_onion", "cajun_spice", "garlic",
                                                          "sweet_pepper")),
    "prince_carlo": ("PrinceCarlo", "Prince Carlo", ("tomato", "mozzarella", "parmesan", "leek",
                                                     "rosemary")),
    "quattro_formaggi": ("QuattroFormaggi", "Quattro Formaggi", ("tomato", "four_cheeses")),
    "rosa": ("Rosa", "Rosa", ("tomato", "mozzarella", "gorgonzola")),
    "siciliana": ("Siciliana", "Siciliana", ("tomato", "mozzarella", "ham", "garlic",
                                             "artichoke", "olives", "anchovies")),
    "sloppy_giuseppe": ("SloppyGiuseppe", "Sloppy Giuseppe", ("tomato", "mozzarella",
                                                              "hot_spiced_beef", "green_pepper",
                                                              "onion")),
    "soho": ("Soho", "Soho", ("tomato", "mozzarella", "garlic", "olives", "parmesan", "rocket")),
    "veneziana": ("Veneziana", "Veneziana", ("tomato", "mozzarella", "onion", "olives", "capers",
                                             "pine_kernels", "sultanas")),
}
MEAT_OR_FISH = {"anchovies", "chicken", "ham", "hot_spiced_beef", "mixed_seafood", "parma_ham",
                "pepperoni", "prawns"}
VEGETARIAN = sorted(r for r, (_c, _l, t) in RECIPES.items() if not MEAT_OR_FISH & set(t))
# base individual -> (Pizza class, label, what the crust column calls it)
BASES = {"thin_and_crispy": ("ThinAndCrispyBase", "thin and crispy base", "thin crust"),
         "deep_pan": ("DeepPanBase", "deep pan base", "deep pan crust")}
DIETS = {"vegetarian": ("VegetarianDiet", "vegetarian"),
         "non_vegetarian": ("NonVegetarianDiet", "non-vegetarian")}
SIZES = ("small", "medium", "large")
PLACEHOLDERS = ("TBD", "N/A", "", "tbc", "[topping]", "<base>", "unknown")
UNKNOWN_TOPPINGS = ("pineapple", "chorizo", "truffle oil", "vegan cheese", "smoked salmon",
                    "sweetcorn", "nduja", "feta")
PLACES = ("Luigi's", "Pizzeria Napoli", "The Stone Oven", "Slice of Camden", "Crust & Co",
          "Forno Rosso", "Bella Vista", "Mama Lucia's", "The Dough Room", "Via Roma")


def _label(name: str) -> str:
    return f"<rdfs:label>{escape(name)}</rdfs:label>"


def _alt(names: tuple[str, ...]) -> str:
    return "".join(f"<skos:altLabel>{escape(n)}</skos:altLabel>" for n in names)


def _prop(name: str, domain: str, range_iri: str) -> list[str]:
    return [f'  <owl:ObjectProperty rdf:about="#{name}">',
            '    <rdf:type rdf:resource="http://www.w3.org/2002/07/owl#FunctionalProperty"/>',
            f'    <rdfs:domain rdf:resource="#{domain}"/>',
            f'    <rdfs:range rdf:resource="{range_iri}"/>', "  </owl:ObjectProperty>",
            f'  <owl:Class rdf:about="#{domain}"><rdfs:subClassOf><owl:Restriction>'
            f'<owl:onProperty rdf:resource="#{name}"/><owl:allValuesFrom rdf:resource='
            f'"{range_iri}"/></owl:Restriction></rdfs:subClassOf></owl:Class>']


def owl(typed: bool = False) -> str:
    """The extension ontology. `typed`: each recipe is typed with its Pizza class instead of
    our recipe classes (for the test that our vegetarian split is the one HermiT infers from
    Pizza; slow to classify)."""
    rows = ["PizzaRow", "BaseRow", "ToppingRow", "PriceRow"]
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           "<!-- GENERATED by packs/pizza/generate.py owl: the row layer of the pizza pack over",
           "     the Pizza ontology (imported through [ontology.imports], not copied). -->",
           "<rdf:RDF", f'    xmlns="{NS}"', f'    xml:base="{NS[:-1]}"',
           '    xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"',
           '    xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#"',
           '    xmlns:owl="http://www.w3.org/2002/07/owl#"',
           '    xmlns:skos="http://www.w3.org/2004/02/skos/core#"',
           '    xmlns:xsd="http://www.w3.org/2001/XMLSchema#">',
           f'  <owl:Ontology rdf:about="{NS[:-1]}">',
           f'    <owl:imports rdf:resource="{PZ_IRI}"/>', "  </owl:Ontology>",
           '  <owl:AnnotationProperty rdf:about="http://www.w3.org/2004/02/skos/core#altLabel"/>']
    out += [f'  <owl:Class rdf:about="#{c}"/>' for c in [*rows, "Diet", "Recipe"]]
    out += [f'  <owl:Class rdf:about="#{c}"><rdfs:subClassOf rdf:resource="#Diet"/></owl:Class>'
            for c, _l in DIETS.values()]
    out += [f'  <owl:Class rdf:about="#{c}"><rdfs:subClassOf rdf:resource="#Recipe"/></owl:Class>'
            for c in ("VegetarianRecipe", "NonVegetarianRecipe")]
    # rows and diets are no food (nor countries, which Pizza defines by a nominal): rows stay
    # independent of one another (ontology/independence.py), and each is one kind of row
    members = [*rows, "Diet", "Recipe", PZ + "DomainConcept"]
    out += ['  <owl:AllDisjointClasses><owl:members rdf:parseType="Collection">']
    out += [f'    <owl:Class rdf:about="{m if m.startswith("http") else "#" + m}"/>'
            for m in members]
    out += ["  </owl:members></owl:AllDisjointClasses>",
            '  <owl:Class rdf:about="#VegetarianDiet">'
            '<owl:disjointWith rdf:resource="#NonVegetarianDiet"/></owl:Class>',
            '  <owl:Class rdf:about="#VegetarianRecipe">'
            '<owl:disjointWith rdf:resource="#NonVegetarianRecipe"/></owl:Class>']
    out += _prop("hasRecipe", "PizzaRow", "#Recipe")
    out += _prop("hasDiet", "PizzaRow", "#Diet")
    out += _prop("hasBaseValue", "BaseRow", PZ + "PizzaBase")
    out += _prop("hasToppingValue", "ToppingRow", PZ + "PizzaTopping")
    # a row marked vegetarian takes a vegetarian recipe
    out += ['  <owl:Class rdf:about="#VegetarianPizzaRow">',
            '    <owl:equivalentClass><owl:Class><owl:intersectionOf rdf:parseType="Collection">',
            '      <owl:Class rdf:about="#PizzaRow"/>',
            '      <owl:Restriction><owl:onProperty rdf:resource="#hasDiet"/>'
            '<owl:someValuesFrom rdf:resource="#VegetarianDiet"/></owl:Restriction>',
            "    </owl:intersectionOf></owl:Class></owl:equivalentClass>",
            '    <rdfs:subClassOf><owl:Restriction><owl:onProperty rdf:resource="#hasRecipe"/>'
            '<owl:allValuesFrom rdf:resource="#VegetarianRecipe"/></owl:Restriction>'
            "</rdfs:subClassOf>", "  </owl:Class>",
            '  <owl:DatatypeProperty rdf:about="#hasPriceEur">',
            '    <rdf:type rdf:resource="http://www.w3.org/2002/07/owl#FunctionalProperty"/>',
            '    <rdfs:domain rdf:resource="#PriceRow"/>',
            "    <rdfs:range><rdfs:Datatype>",
            '      <owl:onDatatype rdf:resource="http://www.w3.org/2001/XMLSchema#decimal"/>',
            '      <owl:withRestrictions rdf:parseType="Collection">',
            '        <rdf:Description><xsd:minExclusive rdf:datatype="http://www.w3.org/2001/'
            'XMLSchema#decimal">0</xsd:minExclusive></rdf:Description>',
            '        <rdf:Description><xsd:maxInclusive rdf:datatype="http://www.w3.org/2001/'
            'XMLSchema#decimal">60</xsd:maxInclusive></rdf:Description>',
            "      </owl:withRestrictions>", "    </rdfs:Datatype></rdfs:range>",
            "  </owl:DatatypeProperty>"]

    def ind(name: str, cls: str, label: str, alts: tuple[str, ...] = (), see: str = "") -> str:
        also = f'<rdfs:seeAlso rdf:resource="{see}"/>' if see else ""
        if see and typed:
            cls = see
        return (f'  <owl:NamedIndividual rdf:about="#{name}"><rdf:type rdf:resource="{cls}"/>'
                f"{_label(label)}{_alt(alts)}{also}</owl:NamedIndividual>")

    out += [ind(n, "#" + c, lab) for n, (c, lab) in DIETS.items()]
    out += [ind(n, PZ + c, lab, (crust,)) for n, (c, lab, crust) in BASES.items()]
    out += [ind(n, "#VegetarianRecipe" if n in VEGETARIAN else "#NonVegetarianRecipe", lab,
                see=PZ + c) for n, (c, lab, _t) in RECIPES.items()]
    out += [ind(n, PZ + c, lab, alts) for n, (c, lab, alts) in TOPPINGS.items()]
    out += ["</rdf:RDF>", ""]
    return "\n".join(out)


def _price(rng: random.Random, veg: bool) -> list[float]:
    small = rng.choice((7.5, 8.0, 8.5, 9.0)) + (0.0 if veg else 1.0)
    medium = small + rng.choice((2.5, 3.0, 3.5))
    return [small, medium, medium + rng.choice((2.0, 2.5, 3.0))]


def _words(n: int) -> str:
    return ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
            "ten")[n] if n <= 10 else str(n)


def clean_artifact(i: int, seed: int, pizzas: int | None = None) -> dict[str, object]:
    rng = random.Random(f"{seed}/{i}")
    n = pizzas or rng.randint(4, 7)
    recipes = rng.sample(sorted(RECIPES), n)
    if not set(recipes) & set(VEGETARIAN):  # every menu has a vegetarian pizza
        recipes[-1] = rng.choice(VEGETARIAN)
    tables: dict[str, list[dict[str, object]]] = {"pizzas": [], "bases": [], "toppings": [],
                                                  "prices": []}
    for k, r in enumerate(recipes, start=1):
        pid, veg = f"P{k}", r in VEGETARIAN
        tables["pizzas"].append({"pizza_id": pid, "name": RECIPES[r][1],
                                 "recipe": RECIPES[r][1],
                                 "diet": DIETS["vegetarian" if veg else "non_vegetarian"][1]})
        base = rng.choice(sorted(BASES))
        tables["bases"].append({"pizza_id": pid, "base": BASES[base][1],
                                "crust": BASES[base][2]})
        for j, t in enumerate(RECIPES[r][2], start=1):
            tables["toppings"].append({"topping_id": f"{pid}-T{j}", "pizza_id": pid,
                                       "topping": TOPPINGS[t][1]})
        for size, price in zip(SIZES, _price(rng, veg), strict=True):
            tables["prices"].append({"pizza_id": pid, "size": size, "price_eur": price})
    place = rng.choice(PLACES)
    return {"id": f"menu-{i:04d}", "tables": tables, "prose": "",
            "meta": {"seed": seed, "place": place}}


def _resolve(value: object) -> str | None:
    """The individual a cell names (labels, other labels, crust names), else None."""
    names = {lab.casefold(): n for n, (_c, lab, alts) in TOPPINGS.items()
             for lab in (lab, *alts)}
    names |= {lab.casefold(): n for n, (_c, lab, _t) in RECIPES.items()}
    names |= {s.casefold(): n for n, (_c, lab, crust) in BASES.items() for s in (lab, crust)}
    names |= {lab.casefold(): n for n, (_c, lab) in DIETS.items()}
    return names.get(str(value).casefold()) if isinstance(value, str) else None


def prose(art: dict[str, object], closing: int = 2) -> str:
    """The menu's narrative, written from its tables as they are (flawed or not): it names
    every recipe, base and topping a cell resolves to, and skips what resolves to nothing."""
    tables = art["tables"]
    assert isinstance(tables, dict)
    meta = art["meta"]
    assert isinstance(meta, dict)
    pizzas, prices = tables["pizzas"], [p["price_eur"] for p in tables["prices"]]
    out = [f"{meta['place']} lists {_words(len(pizzas))} pizzas on its menu."]
    for p in pizzas:
        recipe = _resolve(p["recipe"])
        if recipe is None:
            continue
        base = next((_resolve(b["base"]) for b in tables["bases"]
                     if b["pizza_id"] == p["pizza_id"]), None)
        tops = [TOPPINGS[t][1] for row in tables["toppings"] if row["pizza_id"] == p["pizza_id"]
                if (t := _resolve(row["topping"])) in TOPPINGS]
        s = f"The {RECIPES[recipe][1]}"
        s += f" comes on a {BASES[base][1]}" if base in BASES else " is baked to order"
        if tops:
            s += " with " + (", ".join(tops[:-1]) + " and " + tops[-1] if len(tops) > 1
                             else tops[0])
        s += "."
        if _resolve(p["diet"]) == "vegetarian":
            s += " It is vegetarian."
        out.append(s)
    lo, hi = min(prices), max(prices)
    out.append(f"Prices run from {lo:.2f} to {hi:.2f} euros, depending on the size.")
    endings = ["Every dough is proved for two days before it is baked.",
               "Orders can be collected from the counter or delivered within the town."]
    out += endings[:closing]
    return " ".join(out)


class _Seeder:
    """Seeds defects into one artifact's tables (one kind per pizza, never two in one cell)
    and writes the truth lines: one per critique the gates must give."""

    def __init__(self, art: dict[str, object], rng: random.Random) -> None:
        tables = art["tables"]
        assert isinstance(tables, dict)
        self.art, self.rng, self.tables = art, rng, tables
        self.pizzas, self.bases, self.tops, self.prices = (
            tables[k] for k in ("pizzas", "bases", "toppings", "prices"))
        self.free = list(range(len(self.pizzas)))  # pizzas no defect touched yet
        rng.shuffle(self.free)
        self.truth: list[dict[str, object]] = []

    def take(self, want: str | None) -> int | None:
        for i in self.free:
            if want is None or self.pizzas[i]["diet"] == DIETS[want][1]:
                self.free.remove(i)
                return i
        return None

    def rows_of(self, table: list[dict[str, object]], i: int) -> list[int]:
        return [k for k, r in enumerate(table) if r["pizza_id"] == self.pizzas[i]["pizza_id"]]

    def add(self, kind: str, code: str, table: str, row: int, column: str) -> None:
        self.truth.append({"artifact_id": self.art["id"], "defect": kind,
                           "gate": code.partition(".")[0] + "_gate", "code": code,
                           "table": table, "row": row, "column": column,
                           "observed": self.tables[table][row][column]})

    def veg_meat(self, i: int) -> None:  # a meat or fish topping added to a vegetarian pizza
        meat = self.rng.choice(sorted(MEAT_OR_FISH))
        pid = self.pizzas[i]["pizza_id"]
        self.tops.append({"topping_id": f"{pid}-T{len(self.rows_of(self.tops, i)) + 1}",
                          "pizza_id": pid, "topping": TOPPINGS[meat][1]})
        self.add("veg_meat", "ri.vegetarian_topping", "toppings", len(self.tops) - 1, "topping")
        self.add("veg_meat", "ri.vegetarian_label", "pizzas", i, "diet")

    def veg_label(self, i: int) -> None:  # a meat or fish recipe marked vegetarian
        self.pizzas[i]["diet"] = DIETS["vegetarian"][1]
        self.add("veg_label", "value.disjoint", "pizzas", i, "recipe")
        for k in self.rows_of(self.tops, i):
            if _resolve(self.tops[k]["topping"]) in MEAT_OR_FISH:
                self.add("veg_label", "ri.vegetarian_topping", "toppings", k, "topping")
        self.add("veg_label", "ri.vegetarian_label", "pizzas", i, "diet")

    def two_bases(self, i: int) -> None:  # the crust column names the other base
        k = self.rows_of(self.bases, i)[0]
        other = next(b for b in sorted(BASES) if BASES[b][1] != self.bases[k]["base"])
        self.bases[k]["crust"] = BASES[other][2]
        self.add("two_bases", "value.cardinality", "bases", k, "crust")

    def unknown_topping(self, i: int) -> None:
        k = self.rng.choice(self.rows_of(self.tops, i))
        self.tops[k]["topping"] = self.rng.choice(UNKNOWN_TOPPINGS)
        self.add("unknown_topping", "value.unknown", "toppings", k, "topping")

    def placeholder(self, i: int) -> None:
        table, column = self.rng.choice((("pizzas", "recipe"), ("bases", "base"),
                                         ("toppings", "topping")))
        k = i if table == "pizzas" else self.rng.choice(self.rows_of(self.tables[table], i))
        self.tables[table][k][column] = self.rng.choice(PLACEHOLDERS)
        self.add("placeholder", "value.placeholder", table, k, column)

    def price_order(self, i: int) -> None:  # the medium and large prices swapped
        med, large = self.rows_of(self.prices, i)[1:]
        p = self.prices
        p[med]["price_eur"], p[large]["price_eur"] = p[large]["price_eur"], p[med]["price_eur"]
        for k in (med, large):
            self.add("price_order", "ri.price_order", "prices", k, "price_eur")


_KINDS = (("veg_meat", 0.2, "vegetarian"), ("veg_label", 0.12, "non_vegetarian"),
          ("two_bases", 0.15, None), ("unknown_topping", 0.15, None), ("placeholder", 0.25, None),
          ("price_order", 0.15, None))


def inject(art: dict[str, object], rng: random.Random) -> list[dict[str, object]]:
    """Seed defects into `art`'s tables; the truth lines, one per critique the gates owe."""
    seeder = _Seeder(art, rng)
    for kind, _p, diet in [k for k in _KINDS if rng.random() < k[1]]:
        i = seeder.take(diet)
        if i is not None:
            getattr(seeder, kind)(i)
    return seeder.truth


def inject_prose(art: dict[str, object], rng: random.Random) -> list[dict[str, object]]:
    """Seed at most one prose defect into the prose written from the (flawed) tables."""
    text = str(art["prose"])
    roll = rng.random()
    if roll < 0.12:  # a topping named that no cell holds
        held = {_resolve(r["topping"]) for r in art["tables"]["toppings"]}  # type: ignore[index]
        extra = rng.choice([t for t in sorted(TOPPINGS) if t not in held])
        cut = text.rindex(" Every dough")
        text = text[:cut] + f" Extra {TOPPINGS[extra][1]} can be added to any pizza." + text[cut:]
        truth = [{"artifact_id": art["id"], "defect": "prose_unknown", "gate": "prose_gate",
                  "code": "prose.unknown_entity", "observed": extra}]
    elif roll < 0.22:  # the count of pizzas is wrong
        n = len(art["tables"]["pizzas"])  # type: ignore[index]
        wrong = n + rng.choice((-1, 1))
        text = text.replace(f" lists {_words(n)} pizzas", f" lists {_words(wrong)} pizzas", 1)
        truth = [{"artifact_id": art["id"], "defect": "prose_count", "gate": "prose_gate",
                  "code": "prose.value_mismatch", "observed": _words(wrong)}]
    elif roll < 0.32:  # cut off inside the closing sentences
        cut = text.rindex(" Orders can") + rng.randint(12, 40)
        text = text[:cut].rstrip(" ,&")
        truth = [{"artifact_id": art["id"], "defect": "prose_truncated", "gate": "prose_gate",
                  "code": "prose.truncated", "observed": text[-40:]}]
    else:
        truth = []
    art["prose"] = text
    return truth


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in rows)


def corpus(seed: int, count: int, out: Path) -> None:
    clean, flawed, truth = [], [], []
    for i in range(1, count + 1):
        art = clean_artifact(i, seed)
        art["prose"] = prose(art)
        clean.append(json.loads(json.dumps(art)))
        rng = random.Random(f"{seed}/{i}/defects")
        lines = inject(art, rng)
        art["prose"] = prose(art)
        lines += inject_prose(art, rng)
        flawed.append(art)
        truth += lines
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo.clean.jsonl").write_text(_jsonl(clean), encoding="utf-8")
    (out / "demo.jsonl").write_text(_jsonl(flawed), encoding="utf-8")
    (out / "demo.truth.jsonl").write_text(_jsonl(truth), encoding="utf-8")


def references(out: Path) -> None:
    """Reference narratives: clean menus of 2 to 18 pizzas, one or two closing sentences
    (~60 to ~390 words: a long menu's narrative is long too)."""
    out.mkdir(parents=True, exist_ok=True)
    for k, n in enumerate((2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 18), start=1):
        art = clean_artifact(1000 + k, 99, pizzas=n)
        text = prose(art, closing=1 + k % 2)
        (out / f"reference-{k:02d}.txt").write_text(text + "\n", encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    o = sub.add_parser("owl")
    o.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("corpus")
    c.add_argument("--seed", type=int, default=11)
    c.add_argument("--count", type=int, default=120)
    c.add_argument("--out", type=Path, required=True)
    r = sub.add_parser("references")
    r.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    if a.what == "owl":
        a.out.write_text(owl(), encoding="utf-8")
    elif a.what == "corpus":
        corpus(a.seed, a.count, a.out)
    else:
        references(a.out)


if __name__ == "__main__":
    main()
