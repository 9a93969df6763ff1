"""Property tests of the API from its own OpenAPI schema: hypothesis draws every operation's
path and query parameters and bodies (what the schema says, the workspace's real ids, and
hostile text: traversal, NUL, unicode, huge numbers) and sends them over loopback HTTP. No
request gets a 500; every error is JSON with a stable code."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.serve.conftest import TOKEN, Served

pytestmark = pytest.mark.java

CODE = re.compile(r"^[a-z_]+(\.[a-z_]+)*$")
HOSTILE = [
    "..",
    "../..",
    "../../etc/passwd",
    "%2e%2e",
    "..%2F..%2Fmembrane.toml",
    "/",
    "\\..\\",
    ".membrane",
    "a\x00b",
    "ledger.sqlite",
    "*",
    "'; DROP TABLE runs; --",
    "é\u202e",
    " ",
    "0",
    "-1",
    "99999999999999999999",
    "fac-0001.r1/../../x",
]


def _ids(s: Served) -> list[str]:
    with httpx.Client(base_url=s.url, timeout=60) as c:
        runs = c.get("/api/v1/runs", params={"limit": 500}).json()["items"]
    return sorted({r["run_id"] for r in runs} | {r["artifact_id"] for r in runs})


def _value(schema: dict[str, Any], ids: list[str]) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = [
        st.sampled_from(HOSTILE),
        st.sampled_from(ids),
        st.text(max_size=40),
    ]
    for sub in [schema, *schema.get("anyOf", [])]:
        if "enum" in sub:
            options.append(st.sampled_from(sub["enum"]))
        if sub.get("type") == "integer":
            options.append(st.integers(min_value=-(2**70), max_value=2**70).map(str))
        if sub.get("type") == "string":
            options.append(st.sampled_from(["equipment", "rooms", "standard", "0", "1", "EQ-001"]))
    return st.one_of(options)


def _operations(s: Served) -> list[tuple[str, str, dict[str, Any]]]:
    with httpx.Client(base_url=s.url, timeout=60) as c:
        spec = c.get("/api/v1/openapi.json").json()
    return [
        (path, method, op)
        for path, ops in sorted(spec["paths"].items())
        for method, op in sorted(ops.items())
        if method in ("get", "post")
    ]


@st.composite
def _requests(
    draw: st.DrawFn, ops: list[tuple[str, str, dict[str, Any]]], ids: list[str]
) -> tuple[str, str, dict[str, str], Any, dict[str, str]]:
    path, method, op = draw(st.sampled_from(ops))
    url = path
    query: dict[str, str] = {}
    for p in op.get("parameters", []):
        value = str(draw(_value(p.get("schema", {}), ids)))
        if p["in"] == "path":
            raw = draw(st.booleans())  # sometimes unquoted: the router must cope either way
            part = quote(value, safe="") if not raw else quote(value, safe="/.")
            url = url.replace("{" + p["name"] + "}", part or "x")
        elif p["in"] == "query" and draw(st.booleans()):
            query[p["name"]] = value
    body: Any = None
    if method == "post":
        body = draw(
            st.one_of(
                st.none(),
                st.fixed_dictionaries(
                    {}, optional={"note": st.text(max_size=30), "reason": st.text(max_size=30)}
                ),
                st.recursive(
                    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                    lambda x: (
                        st.lists(x, max_size=3)
                        | st.dictionaries(st.text(max_size=5), x, max_size=3)
                    ),
                    max_leaves=6,
                ),
            )
        )
    headers = draw(
        st.sampled_from([{}, {"Authorization": f"Bearer {TOKEN}"}, {"Authorization": "Bearer x"}])
    )
    return method, url, query, body, headers


def _check(r: httpx.Response) -> None:
    # 500 is a crash; a deliberate 5xx (503: a feature switched off) must still be a coded error
    assert r.status_code != 500, f"{r.request.method} {r.request.url}: {r.text[:300]}"
    if not r.request.url.path.startswith("/api/v1/"):
        return  # an unquoted `..` the client resolved out of the API: a page (or a redirect)
    if r.status_code >= 400:
        assert r.headers["content-type"].startswith("application/json"), r.text[:200]
        code = r.json()["error"]["code"]
        assert CODE.fullmatch(code), code
    else:
        r.json()


@pytest.fixture(scope="module")
def plan(reviewing: Served) -> tuple[Served, list[tuple[str, str, dict[str, Any]]], list[str]]:
    return reviewing, _operations(reviewing), _ids(reviewing)


def test_the_schema_covers_every_api_route(plan: Any) -> None:
    ops = plan[1]
    assert len(ops) >= 13
    assert {m for _p, m, _o in ops} == {"get", "post"}
    assert all("422" not in op["responses"] for _p, _m, op in ops)  # errors are 400 ErrorBody


@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_no_request_drawn_from_the_schema_gets_a_500(plan: Any, data: st.DataObject) -> None:
    s, ops, ids = plan
    method, url, query, body, headers = data.draw(_requests(ops, ids))
    with httpx.Client(base_url=s.url, timeout=120) as c:
        if method == "get":
            r = c.get(url, params=query, headers=headers)
        else:
            r = c.post(url, params=query, headers=headers, json=body)
    _check(r)
