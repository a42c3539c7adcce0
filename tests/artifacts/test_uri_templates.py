"""RFC 6570 URI templates: expansion per the RFC's examples, matching, round trips, hostile input."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


@pytest.mark.parametrize(
    "template",
    [
        "x://" + "".join(f"{{v{i}}}." for i in range(40)) + "end",
        "x://" + "".join(f"{{v{i}}}-x" for i in range(40)) + "-x",
        "x://" + "".join(f"{{/v{i}}}" for i in range(40)) + "/z",
        "x://{+a}" + "".join(f"{{.v{i}}}" for i in range(30)) + ".md",
        "x://{/" + ",".join(f"v{i}" for i in range(40)) + "}{?" + ",".join(f"q{i}" for i in range(40)) + "}#end",
    ],
)
@pytest.mark.parametrize(
    "uri",
    [
        "x://" + "a." * 5000 + "!",
        "x://" + "-x" * 5000 + "!",
        "x://" + "/a" * 5000,
        "x://" + "a" * 5000 + "?" + "q1=a&" * 1000 + "#",
        "x://" + "." * 10_000,
    ],
)
def test_matching_a_10_kb_uri_against_many_variables_stays_fast(template: str, uri: str) -> None:
    compiled = UriTemplate(template)
    started = time.perf_counter()
    for _ in range(10):
        compiled.match(uri)
    assert time.perf_counter() - started < 2  # timing-ok: ~15 ms; catastrophic backtracking would take ages


def test_an_expression_with_thousands_of_variables_compiles_and_matches() -> None:
    names = [f"v{i}" for i in range(2000)]
    template = UriTemplate("x://a{/" + ",".join(names) + "}{?" + ",".join(f"q{i}" for i in range(2000)) + "}")
    assert template.match("x://a/1/2?q7=3") == {"v0": "1", "v1": "2", "q7": "3"}
    values = {name: str(i) for i, name in enumerate(names)}
    assert template.match(template.expand(values)) == values
