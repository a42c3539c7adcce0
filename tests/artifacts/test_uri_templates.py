"""RFC 6570 URI templates: expansion per the RFC's examples, matching, round trips, hostile input."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from apimcp.artifacts.uri_matching import PART_STEPS, MatchBudget, MatchBudgetSpent
from apimcp.artifacts.uri_templates import UriTemplate, Value

# The variables of RFC 6570 section 3.2.
RFC: dict[str, Value] = {
    "count": ["one", "two", "three"],
    "dom": ["example", "com"],
    "dub": "me/too",
    "hello": "Hello World!",
    "half": "50%",
    "var": "value",
    "who": "fred",
    "base": "http://example.com/home/",
    "path": "/foo/bar",
    "list": ["red", "green", "blue"],
    "keys": {"semi": ";", "dot": ".", "comma": ","},
    "v": "6",
    "x": "1024",
    "y": "768",
    "empty": "",
    "empty_keys": {},
    "undef": None,
}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        # level 1 and simple expansion
        ("{var}", "value"),
        ("{hello}", "Hello%20World%21"),
        ("{half}", "50%25"),
        ("O{empty}X", "OX"),
        ("O{undef}X", "OX"),
        ("{x,y}", "1024,768"),
        ("?{x,empty}", "?1024,"),
        ("?{undef,y}", "?768"),
        ("{var:3}", "val"),
        ("{var:30}", "value"),
        ("{list}", "red,green,blue"),
        ("{list*}", "red,green,blue"),
        ("{keys}", "semi,%3B,dot,.,comma,%2C"),
        ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
        # reserved
        ("{+hello}", "Hello%20World!"),
        ("{+half}", "50%25"),
        ("{base}index", "http%3A%2F%2Fexample.com%2Fhome%2Findex"),
        ("{+base}index", "http://example.com/home/index"),
        ("{+path:6}/here", "/foo/b/here"),
        ("{+keys}", "semi,;,dot,.,comma,,"),
        ("{+keys*}", "semi=;,dot=.,comma=,"),
        # fragment
        ("{#hello}", "#Hello%20World!"),
        ("foo{#empty}", "foo#"),
        ("foo{#undef}", "foo"),
        ("{#path,x}/here", "#/foo/bar,1024/here"),
        ("{#keys*}", "#semi=;,dot=.,comma=,"),
        # label
        ("{.who,who}", ".fred.fred"),
        ("www{.dom*}", "www.example.com"),
        ("X{.empty}", "X."),
        ("X{.undef}", "X"),
        ("X{.list*}", "X.red.green.blue"),
        ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
        ("X{.empty_keys*}", "X"),
        # path segments
        ("{/who,dub}", "/fred/me%2Ftoo"),
        ("{/var,empty}", "/value/"),
        ("{/var,undef}", "/value"),
        ("{/var:1,var}", "/v/value"),
        ("{/list*}", "/red/green/blue"),
        ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
        ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
        # path parameters
        ("{;v,empty,who}", ";v=6;empty;who=fred"),
        ("{;x,y,undef}", ";x=1024;y=768"),
        ("{;hello:5}", ";hello=Hello"),
        ("{;list*}", ";list=red;list=green;list=blue"),
        ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
        ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
        # query and its continuation
        ("{?x,y,empty}", "?x=1024&y=768&empty="),
        ("{?var:3}", "?var=val"),
        ("{?list}", "?list=red,green,blue"),
        ("{?list*}", "?list=red&list=green&list=blue"),
        ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
        ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
        ("{&x,y,empty}", "&x=1024&y=768&empty="),
        ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
    ],
)
def test_expansion_follows_the_rfc_examples(template: str, expected: str) -> None:
    assert UriTemplate.parse(template).expand(RFC) == expected


def test_a_prefix_modifier_on_a_list_is_refused_at_expansion() -> None:
    with pytest.raises(ValueError, match="prefix modifier"):
        UriTemplate("{list:3}").expand({"list": ["a"]})


@pytest.mark.parametrize(
    ("template", "uri", "expected"),
    [
        ("file:///docs/{section}/{page}.md", "file:///docs/guides/intro.md", {"section": "guides", "page": "intro"}),
        # the literal that ends the template is found from the end: dots stay in the value
        ("file:///docs/{section}/{page}.md", "file:///docs/guides/v1.2.md", {"section": "guides", "page": "v1.2"}),
        (
            "repo://{owner}/{repo}{?ref}",
            "repo://octo/hello?ref=main",
            {"owner": "octo", "repo": "hello", "ref": "main"},
        ),
        ("repo://{owner}/{repo}{?ref}", "repo://octo/hello", {"owner": "octo", "repo": "hello"}),
        ("a://{x}/{+rest}", "a://1/b/c/d.txt", {"x": "1", "rest": "b/c/d.txt"}),
        ("a://p{#frag}", "a://p#sec/2", {"frag": "sec/2"}),
        ("a://host{.ext}", "a://host.json", {"ext": "json"}),
        ("a://f/{name}{.ext}", "a://f/readme.md", {"name": "readme", "ext": "md"}),
        ("a://x{/seg,other}", "a://x/one/two", {"seg": "one", "other": "two"}),
        ("a://x{/seg,other}", "a://x/one", {"seg": "one"}),
        ("a://m{;lat,long}", "a://m;long=2;lat=1", {"lat": "1", "long": "2"}),
        ("a://s{?q,limit}", "a://s?limit=5&q=cats", {"q": "cats", "limit": "5"}),
        ("a://s{?q}{&page}", "a://s?page=2&q=x", {"q": "x", "page": "2"}),
        ("a://{x,y}", "a://1024,768", {"x": "1024", "y": "768"}),
        ("a://{who}", "a://Hello%20World%21", {"who": "Hello World!"}),
        ("a://{who}", "a://caf%C3%A9", {"who": "café"}),
        ("a://{id}/x", "a:///x", {"id": ""}),
        # exploded variables come back as one string
        ("a://x{/path*}", "a://x/red/green/blue", {"path": "red/green/blue"}),
        ("a://{?tag*}", "a://?tag=a&tag=b", {"tag": "a,b"}),
        # a variable used twice must read the same way twice
        ("a://x{/v:1,v}", "a://x/v/value", {"v": "value"}),
    ],
)
def test_match_extracts_every_variable_percent_decoded(template: str, uri: str, expected: dict[str, str]) -> None:
    assert UriTemplate(template).match(uri) == expected


@pytest.mark.parametrize(
    ("template", "uri"),
    [
        ("file:///docs/{section}/{page}.md", "file:///docs/guides/intro.txt"),
        ("file:///docs/{section}/{page}.md", "file:///docs/a/b/c.md"),  # a simple value never spans segments
        ("file:///docs/{section}/{page}.md", "file:///other/guides/intro.md"),
        ("repo://{owner}/{repo}{?ref}", "repo://octo/hello?branch=main"),  # a name the template does not declare
        ("a://s{?q}", "a://s?q=1&q=2"),  # a name given twice
        ("a://x{/v:1,v}", "a://x/x/value"),  # occurrences that disagree
        ("a://{v:3}", "a://toolong"),
        ("a://{id}", "b://1"),
        ("a://{id}", ""),
    ],
)
def test_a_uri_the_template_cannot_produce_does_not_match(template: str, uri: str) -> None:
    assert UriTemplate(template).match(uri) is None


def test_variables_are_listed_once_in_order_of_appearance() -> None:
    template = UriTemplate("a://{x}/{+y}{#z}{.a}{/b,x}{;c}{?d,e*}{&f:2}")
    assert template.variables == ("x", "y", "z", "a", "b", "c", "d", "e", "f")
    assert UriTemplate("plain://literal").variables == ()


@pytest.mark.parametrize(
    ("template", "problem"),
    [
        ("a://{id", "not closed"),
        ("a://id}", "closes no expression"),
        ("a://{}", "empty expression"),
        ("a://{=id}", "reserved by RFC 6570"),
        ("a://{|id}", "reserved by RFC 6570"),
        ("a://{a,,b}", "'' in {a,,b} is not a variable"),
        ("a://{a b}", "is not a variable"),
        ("a://{a:0}", "is not a variable"),
        ("a://{a:10000}", "is not a variable"),
        ("a://{a:2*}", "is not a variable"),
        ("a://{a{b}}", "'{' inside the expression"),
        ("a://x y", "' ' at position 5"),
        ("a://50%", "does not start a %XX escape"),
        ("a://{a}{b}", "{a} and {b} touch"),
        ("a://{/a}{+b}", "{/a} and {+b} touch"),
    ],
)
def test_malformed_templates_are_refused_naming_the_problem(template: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)) as raised:
        UriTemplate(template)
    assert template in str(raised.value)


# --- round trips -------------------------------------------------------------------------------

# Characters an RFC expansion percent-encodes in every operator but + and #, plus unreserved ones.
# "." is left out: the label operator `{.a,b}` does not encode it, so `a.b` could not be split back.
_VALUES = st.text(st.characters(codec="utf-8", exclude_characters="."), max_size=12)


@pytest.mark.parametrize(
    "template",
    [
        "s://{a}/{b}/x",
        "s://{a,b}",
        "s://x{.a,b}",
        "s://x{/a,b}/y",
        "s://x{;a,b}",
        "s://x{?a,b}",
        "s://x?fixed=1{&a,b}",
        "s://x{/a}{?b}",
        "s://{a}{#b}",
    ],
)
@settings(max_examples=60, derandomize=True, deadline=None)
@given(a=_VALUES, b=_VALUES)
def test_match_inverts_expand_for_every_operator(template: str, a: str, b: str) -> None:
    compiled = UriTemplate(template)
    uri = compiled.expand({"a": a, "b": b})
    assert compiled.match(uri) == {"a": a, "b": b}
    assert compiled.expand(compiled.match(uri) or {}) == uri


@pytest.mark.parametrize(
    ("template", "values", "expected"),
    [
        ("file:///{+path}", {"path": "docs/a b/ü.md"}, {"path": "docs/a b/ü.md"}),
        # + and # keep %XX escapes already in a value: they decode on the way back
        ("s://{+a}/{+b}", {"a": "x:y@z", "b": "50%25 done"}, {"a": "x:y@z", "b": "50% done"}),
        ("s://p{#frag}", {"frag": "top/part?x=1"}, {"frag": "top/part?x=1"}),
        ("s://p{/list*}", {"list": ["a", "b", "c"]}, {"list": "a/b/c"}),
        ("s://p{.list*}", {"list": ["a", "b"]}, {"list": "a.b"}),
        ("s://p{?list*}", {"list": ["a", "b"]}, {"list": "a,b"}),
        ("s://p{?q:3}", {"q": "category"}, {"q": "cat"}),
    ],
)
def test_reserved_fragment_exploded_and_prefix_values_round_trip(
    template: str, values: dict[str, Value], expected: dict[str, str]
) -> None:
    compiled = UriTemplate(template)
    assert compiled.match(compiled.expand(values)) == expected


def test_an_optional_expression_left_out_is_absent_from_the_match() -> None:
    template = UriTemplate("s://x{/a,b}{?c}")
    assert template.match(template.expand({"a": "1"})) == {"a": "1"}
    assert template.match(template.expand({})) == {}


# --- hostile input -----------------------------------------------------------------------------


# Templates and URI families that made a regular expression with a lookahead per character (or a
# backtracking one) cost far more than the URI's length.
_HOSTILE: list[tuple[str, Callable[[int], str]]] = [
    ("file:///redos/{a}" + "a" * 2000 + "b{b}", lambda n: "file:///redos/" + "a" * n),  # the finding's form
    ("file:///redos/{a}" + "x" * 50 + "!", lambda n: "file:///redos/" + "x" * n + "!"),
    ("x://" + "".join(f"{{v{i}}}." for i in range(40)) + "end", lambda n: "x://" + "a." * (n // 2) + "end"),
    ("x://" + "".join(f"{{v{i}}}-x" for i in range(40)) + "-x", lambda n: "x://" + "a-" * (n // 2) + "-x-x"),
    ("x://" + "".join(f"{{+v{i}}}-x" for i in range(40)) + "-x", lambda n: "x://" + "-x" * (n // 2)),
    ("x://" + "".join(f"{{/v{i}}}" for i in range(40)) + "/z", lambda n: "x://" + "/a" * (n // 2) + "/z"),
    ("x://{+a}" + "".join(f"{{.v{i}}}" for i in range(30)) + ".md", lambda n: "x://" + "a." * (n // 2) + "md"),
    ("x://{a}{.b}aab{c}", lambda n: "x://" + "a." * (n // 2)),  # a literal the URI overlaps everywhere
    ("x://{a}{.b}{.c}" + "ab" * 300 + "c/{d}", lambda n: "x://" + "ab" * (n // 2)),
    ("x://{/a*}/" + "ab" * 300 + "{?q*}", lambda n: "x://" + "/ab" * (n // 3) + "?" + "q=1&" * (n // 8)),
    ("x://{/" + ",".join(f"v{i}" for i in range(40)) + "}{?" + ",".join(f"q{i}" for i in range(40)) + "}#end",
     lambda n: "x:///" + "a" * (n // 2) + "?" + "q1=a&" * (n // 10) + "#end"),
    ("x://{+b}{#a}", lambda n: "x://" + "." * n + "#" + "." * n),
]  # fmt: skip


def _steps(template: UriTemplate, uri: str) -> int:
    budget = MatchBudget(sys.maxsize)
    template.match(uri, budget)
    return budget.spent


@pytest.mark.parametrize(("template", "uri_of"), _HOSTILE, ids=[f"hostile-{i}" for i in range(len(_HOSTILE))])
def test_template_matching_is_linear_not_uri_length_times_literal_length(
    template: str, uri_of: Callable[[int], str]
) -> None:
    """Finding M3: a 400 KB URI against `file:///redos/{a}`-style templates stalled the loop 2 s. The work is
    counted (characters examined, parts visited), not timed: doubling the URI at most doubles it, and it stays
    within a constant times the URI's length plus the template's, whatever the literals' lengths (a query's
    pairs count as parts: at worst one per character)."""
    compiled = UriTemplate(template)
    for n in (2048, 4096, 8192):
        small, large = _steps(compiled, uri_of(n)), _steps(compiled, uri_of(2 * n))
        assert large <= 2 * small + 2 * PART_STEPS * len(template), (n, small, large)
        assert large <= (PART_STEPS + 4) * len(uri_of(2 * n)) + 2 * PART_STEPS * len(template)


def test_a_budget_ends_a_reading_when_it_is_spent() -> None:
    compiled = UriTemplate("file:///redos/{a}" + "a" * 100 + "b{b}")
    uri = "file:///redos/" + "a" * 8000
    needed = _steps(compiled, uri)
    budget = MatchBudget(needed - 1)
    with pytest.raises(MatchBudgetSpent, match=f"more than {needed - 1} steps"):
        compiled.match(uri, budget)
    assert compiled.match(uri, MatchBudget(needed)) is None  # no match, within its budget


def test_an_expression_with_thousands_of_variables_compiles_and_matches() -> None:
    names = [f"v{i}" for i in range(2000)]
    template = UriTemplate("x://a{/" + ",".join(names) + "}{?" + ",".join(f"q{i}" for i in range(2000)) + "}")
    assert template.match("x://a/1/2?q7=3") == {"v0": "1", "v1": "2", "q7": "3"}
    values = {name: str(i) for i, name in enumerate(names)}
    assert template.match(template.expand(values)) == values
