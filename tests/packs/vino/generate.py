"""Writes the vino test pack's ontologies: an enumeration-heavy, wine-like "third-party"
ontology (our own, written for the tests; not the W3C wine ontology, whose licence forbids
derivatives) and the pack's extension ontology that imports it.

The third-party file has the shape that made the W3C wine ontology slow for the value gate:
descriptor classes defined as enumerations (`owl:oneOf`: colour, body, flavour, sugar), many
wine classes defined by `hasValue` on those nominals, regions, wineries and grapes, and food
courses whose drinks are restricted by nominals. Run it to regenerate:
`python tests/packs/vino/generate.py`.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
BASE = "http://membrane.dev/tests/vino-base"
EXT = "http://membrane.dev/tests/vino"
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
OWL = "http://www.w3.org/2002/07/owl#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"

ENUMS = {
    "WineColor": ["White", "Rose", "Red"],
    "WineBody": ["Light", "Medium", "Full"],
    "WineFlavor": ["Delicate", "Moderate", "Strong"],
    "WineSugar": ["Dry", "OffDry", "Sweet"],
}
PROPS = {"WineColor": "hasColor", "WineBody": "hasBody", "WineFlavor": "hasFlavor",
         "WineSugar": "hasSugar"}
GRAPES = {  # grape -> colour of its wine
    "Chardonnay": "White", "SauvignonBlanc": "White", "Riesling": "White", "CheninBlanc": "White",
    "Semillon": "White", "PinotBlanc": "White", "Muscadet": "White", "Gamay": "Red",
    "PinotNoir": "Red", "Merlot": "Red", "CabernetSauvignon": "Red", "CabernetFranc": "Red",
    "Malbec": "Red", "Zinfandel": "Red", "Syrah": "Red", "Sangiovese": "Red",
}
REGIONS = ["Bordeaux", "Bourgogne", "Loire", "Alsace", "Rhone", "Tuscany", "Mosel", "Napa",
           "Sonoma", "Barossa", "Rioja", "Douro", "Mendoza", "Marlborough", "Languedoc",
           "Provence", "Piemonte", "Ribera", "Willamette", "Stellenbosch"]
WINERIES = [f"Winery{i:02d}" for i in range(1, 41)]


def _lit(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _label(name: str) -> str:
    out = "".join(" " + c.lower() if c.isupper() and i else c for i, c in enumerate(name))
    return out[0].upper() + out[1:]


class NT:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.blank = 0

    def t(self, s: str, p: str, o: str) -> None:
        self.lines.append(f"{s} {p} {o} .")

    def node(self) -> str:
        self.blank += 1
        return f"_:b{self.blank}"

    def cls(self, iri: str, label: str | None = None) -> None:
        self.t(f"<{iri}>", f"<{RDF}type>", f"<{OWL}Class>")
        if label:
            self.t(f"<{iri}>", f"<{RDFS}label>", _lit(label))

    def ind(self, iri: str, cls: str, label: str) -> None:
        self.t(f"<{iri}>", f"<{RDF}type>", f"<{OWL}NamedIndividual>")
        self.t(f"<{iri}>", f"<{RDF}type>", f"<{cls}>")
        self.t(f"<{iri}>", f"<{RDFS}label>", _lit(label))

    def listof(self, items: list[str]) -> str:
        head = f"<{RDF}nil>"
        for item in reversed(items):
            n = self.node()
            self.t(n, f"<{RDF}first>", item)
            self.t(n, f"<{RDF}rest>", head)
            head = n
        return head

    def restriction(self, prop: str, kind: str, value: str) -> str:
        n = self.node()
        self.t(n, f"<{RDF}type>", f"<{OWL}Restriction>")
        self.t(n, f"<{OWL}onProperty>", f"<{prop}>")
        self.t(n, f"<{OWL}{kind}>", value)
        return n

    def intersection(self, parts: list[str]) -> str:
        n = self.node()
        self.t(n, f"<{RDF}type>", f"<{OWL}Class>")
        self.t(n, f"<{OWL}intersectionOf>", self.listof(parts))
        return n


def base() -> str:
    g = NT()
    b = f"{BASE}#"
    g.t(f"<{BASE}>", f"<{RDF}type>", f"<{OWL}Ontology>")
    for c in ("Wine", "WineDescriptor", "WineTaste", "WineGrape", "Region", "Winery",
              "EdibleThing", "MealCourse", "Food"):
        g.cls(b + c, _label(c))
    g.t(f"<{b}WineTaste>", f"<{RDFS}subClassOf>", f"<{b}WineDescriptor>")
    everyone: list[str] = []
    for cls, members in ENUMS.items():
        g.cls(b + cls, _label(cls))
        parent = "WineDescriptor" if cls == "WineColor" else "WineTaste"
        g.t(f"<{b}{cls}>", f"<{RDFS}subClassOf>", f"<{b}{parent}>")
        g.t(f"<{b}{cls}>", f"<{OWL}oneOf>", g.listof([f"<{b}{m}>" for m in members]))
        for m in members:
            g.ind(b + m, b + cls, _label(m).lower())
            everyone.append(f"<{b}{m}>")
    for prop, rng in [(PROPS[c], c) for c in ENUMS] + [("madeFromGrape", "WineGrape"),
                                                       ("locatedIn", "Region"),
                                                       ("hasMaker", "Winery"),
                                                       ("hasDrink", "Wine")]:
        g.t(f"<{b}{prop}>", f"<{RDF}type>", f"<{OWL}ObjectProperty>")
        g.t(f"<{b}{prop}>", f"<{RDFS}range>", f"<{b}{rng}>")
        if prop in PROPS.values():
            g.t(f"<{b}{prop}>", f"<{RDF}type>", f"<{OWL}FunctionalProperty>")
    n = g.node()
    g.t(n, f"<{RDF}type>", f"<{OWL}AllDifferent>")
    g.t(n, f"<{OWL}distinctMembers>", g.listof(everyone))
    _things(g, b)
    _wines(g, b)
    _courses(g, b)
    return "\n".join(g.lines) + "\n"


def _things(g: NT, b: str) -> None:
    for grape in GRAPES:
        g.ind(f"{b}{grape}Grape", f"{b}WineGrape", _label(grape) + " grape")
    for region in REGIONS:
        g.ind(f"{b}{region}Region", f"{b}Region", region)
    for winery in WINERIES:
        g.ind(f"{b}{winery}", f"{b}Winery", _label(winery))


def _wines(g: NT, b: str) -> None:
    """Wine classes defined by nominals: colour, sugar, body, flavour; per grape; regional."""
    for cls, members in ENUMS.items():
        for m in members:
            name = f"{m}{'Wine' if cls == 'WineColor' else cls.removeprefix('Wine') + 'Wine'}"
            g.cls(b + name, _label(name))
            g.t(f"<{b}{name}>", f"<{OWL}equivalentClass>", g.intersection(
                [f"<{b}Wine>", g.restriction(b + PROPS[cls], "hasValue", f"<{b}{m}>")]))
    for grape, colour in GRAPES.items():
        g.cls(b + grape, _label(grape))
        g.t(f"<{b}{grape}>", f"<{OWL}equivalentClass>", g.intersection(
            [f"<{b}Wine>", g.restriction(b + "madeFromGrape", "hasValue", f"<{b}{grape}Grape>")]))
        g.t(f"<{b}{grape}>", f"<{RDFS}subClassOf>",
            g.restriction(b + "hasColor", "hasValue", f"<{b}{colour}>"))
    for i, region in enumerate(REGIONS):
        g.cls(f"{b}{region}Wine", f"{region} wine")
        g.t(f"<{b}{region}Wine>", f"<{OWL}equivalentClass>", g.intersection(
            [f"<{b}Wine>", g.restriction(b + "locatedIn", "hasValue", f"<{b}{region}Region>")]))
        sugar = ("Dry", "OffDry", "Sweet")[i % 3]
        g.t(f"<{b}{region}Wine>", f"<{RDFS}subClassOf>",
            g.restriction(b + "hasSugar", "hasValue", f"<{b}{sugar}>"))


def _courses(g: NT, b: str) -> None:
    for i, course in enumerate(["Fish", "Shellfish", "RedMeat", "WhiteMeat", "Pasta", "Cheese",
                                "Dessert", "Fruit", "Nut", "SpicyDish"]):
        g.cls(f"{b}{course}Course", f"{_label(course).lower()} course")
        g.t(f"<{b}{course}Course>", f"<{RDFS}subClassOf>", f"<{b}MealCourse>")
        colour = ("White", "Red")[i % 2]
        body = ("Light", "Medium", "Full")[i % 3]
        drink = g.intersection([
            f"<{b}Wine>", g.restriction(b + "hasColor", "hasValue", f"<{b}{colour}>"),
            g.restriction(b + "hasBody", "hasValue", f"<{b}{body}>")])
        g.t(f"<{b}{course}Course>", f"<{RDFS}subClassOf>",
            g.restriction(b + "hasDrink", "allValuesFrom", drink))


def extension() -> str:
    g = NT()
    b, e = f"{BASE}#", f"{EXT}#"
    g.t(f"<{EXT}>", f"<{RDF}type>", f"<{OWL}Ontology>")
    g.t(f"<{EXT}>", f"<{OWL}imports>", f"<{BASE}>")
    g.cls(e + "WineRow", "wine row")
    g.t(f"<{e}WineRow>", f"<{RDFS}subClassOf>", f"<{b}Wine>")
    for cls, prop in PROPS.items():
        g.t(f"<{e}WineRow>", f"<{RDFS}subClassOf>",
            g.restriction(b + prop, "allValuesFrom", f"<{b}{cls}>"))
    for prop, cls in (("madeFromGrape", "WineGrape"), ("hasMaker", "Winery"),
                      ("locatedIn", "Region")):
        g.t(f"<{e}WineRow>", f"<{RDFS}subClassOf>",
            g.restriction(b + prop, "allValuesFrom", f"<{b}{cls}>"))
    return "\n".join(g.lines) + "\n"


if __name__ == "__main__":
    (HERE / "ontology" / "third-party" / "vino-base-1.0.nt").write_text(base(), encoding="utf-8")
    (HERE / "ontology" / "vino.nt").write_text(extension(), encoding="utf-8")
