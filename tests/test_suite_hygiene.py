"""The suite itself: no test bounds wall-clock time from above without saying why.

A test that asserts "answered within 1.5 s" fails the day the machine is busy, although the
behaviour is right. Tests assert orders, counts and states instead, or bounds so far from the
expected value that no loaded machine reaches them; such a bound carries `# timing-ok: <why>`
(on the assertion or the line above it), which this scan accepts.

The scan reads each test module's syntax tree: a value is *timed* when it comes from a clock
(`time.monotonic()`, `perf_counter()`, `time.time()`, a loop's `time()`...), from a name, list
or attribute filled with timed values, or from a function that returns one. An `assert` that
bounds a timed value from above, or exactly, by a constant the test chose (`elapsed < 0.5`,
`time.monotonic() - started < 3`, `answers == [0]`, `waited < within`) is reported. Two timed
values compared (`time.monotonic() < deadline`, one event's time before another's, a clock reading
before a timestamp the code under test wrote) are an order, and a timed value above a constant
(`elapsed >= 1`) a lower bound a slower machine only makes truer: neither is reported. What the
scan cannot see (a `sleep` before checking what happened meanwhile, a short `join` or `wait`
used as the check) is left to review.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).parent
MARKER = "# timing-ok:"
CLOCKS = {"monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "time", "time_ns", "process_time"}
PASSING_ON = {"max", "min", "sum", "round", "abs", "float", "int", "sorted", "list", "tuple", "run", "wait_for"}
"""Calls whose result is (made of) what they are given: a timed value in, a timed value out. Any other call is
timed only when it is a function known to return one; `acquire(time.monotonic() + 10)` answers a bool."""
CLOCK_CALL = re.compile(r"\.(" + "|".join(sorted(CLOCKS)) + r")\(")
IMPORT_FROM_TESTS = re.compile(r"^from (tests(?:\.\w+)+) import", re.MULTILINE)
UPPER = (ast.Lt, ast.LtE)
LOWER = (ast.Gt, ast.GtE)
EQUAL = (ast.Eq, ast.NotEq)


def _is_clock(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in CLOCKS


@dataclass
class _Timed:
    """What holds timed values: names (in one scope), attributes (by name), functions returning them."""

    functions: set[str] = field(default_factory=set)
    """Called by name: the module's own functions and those imported from test modules."""
    methods: set[str] = field(default_factory=set)
    """Called as `something.name(...)`: the module's own functions and methods only."""
    attributes: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)

    def holds(self, node: ast.AST) -> bool:
        """Whether the value of `node` comes, in part, from a clock."""
        if _is_clock(node):
            return True
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute):
            return node.attr in self.attributes or self.holds(node.value)
        if isinstance(node, ast.Call):
            if isinstance(node.func, ast.Name) and node.func.id in self.functions:
                return True
            if isinstance(node.func, ast.Attribute) and node.func.attr in self.methods:
                return True
            called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            return called in PASSING_ON and any(self.holds(argument) for argument in node.args)
        if isinstance(node, (ast.Lambda, ast.JoinedStr)):
            return False  # a function, a text: no time
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            return False  # a clock reading taken modulo something is a seed, not a time
        return any(self.holds(child) for child in ast.iter_child_nodes(node))

    def scope(self) -> _Timed:
        return _Timed(self.functions, self.methods, self.attributes, set(self.names))


def _assignments(node: ast.AST) -> list[tuple[ast.AST, ast.AST]]:
    """(target, value) for each assignment in `node`, and (list, item) for each `list.append(item)`."""
    found: list[tuple[ast.AST, ast.AST]] = []
    for child in ast.walk(node):
        if isinstance(child, ast.Assign):
            found += [(target, child.value) for target in child.targets]
        elif isinstance(child, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) and child.value is not None:
            found.append((child.target, child.value))
        elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and child.args:  # noqa: SIM102
            if child.func.attr in {"append", "extend", "add"}:
                found.append((child.func.value, child.args[0]))
    return found


def _learn(timed: _Timed, assignments: list[tuple[ast.AST, ast.AST]]) -> None:
    """Grow the timed names and attributes from `assignments` until nothing more is learnt."""
    while True:
        known = (len(timed.names), len(timed.attributes))
        for target, value in assignments:
            if timed.holds(value):
                if isinstance(target, ast.Attribute):
                    timed.attributes.add(target.attr)
                timed.names |= {name.id for name in ast.walk(target) if isinstance(name, ast.Name)}
        if (len(timed.names), len(timed.attributes)) == known:
            return


Function = ast.FunctionDef | ast.AsyncFunctionDef
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class _Module:
    path: str
    source: str
    tree: ast.Module = field(init=False)
    imported: dict[str, str] = field(default_factory=dict)
    """Names imported from other test modules, and the module (its path) each comes from."""
    timed: _Timed = field(default_factory=_Timed)

    def __post_init__(self) -> None:
        self.tree = ast.parse(self.source, self.path)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == TESTS.name:
                origin = node.module.replace(".", "/") + ".py"
                self.imported |= {alias.asname or alias.name: origin for alias in node.names}

    def functions(self) -> list[Function]:
        return [node for node in ast.walk(self.tree) if isinstance(node, FUNCTIONS)]

    def learn_locally(self) -> None:
        """The module's own functions that return timed values, and the attributes it fills with them."""
        functions = [(function, _assignments(function)) for function in self.functions()]
        everything = _assignments(self.tree)
        while True:
            known = (len(self.timed.functions), len(self.timed.attributes))
            for function, assignments in functions:
                inside = self.timed.scope()
                _learn(inside, assignments)
                returned = [node.value for node in ast.walk(function) if isinstance(node, ast.Return) and node.value]
                if any(inside.holds(value) for value in returned):
                    self.timed.functions.add(function.name)
                    self.timed.methods.add(function.name)
            attributes = self.timed.scope()  # attributes, whichever scope of the module fills them
            _learn(attributes, everything)
            self.timed.attributes |= attributes.attributes
            if (len(self.timed.functions), len(self.timed.attributes)) == known:
                return

    def learn_from(self, modules: dict[str, _Module]) -> None:
        """What the test modules this one imports from know: their timed functions and attributes."""
        for name, origin in self.imported.items():
            if origin in modules:
                self.timed.attributes |= modules[origin].timed.attributes
                if name in modules[origin].timed.functions:
                    self.timed.functions.add(name)

    def unexplained(self) -> Iterator[ast.Assert]:
        """The module's assertions that bound timed values without a reason, scope by scope."""
        lines = self.source.splitlines()
        top = [node for node in self.tree.body if isinstance(node, (*FUNCTIONS, ast.ClassDef))]
        module = self.timed.scope()
        _learn(module, _assignments(ast.Module(body=[n for n in self.tree.body if n not in top], type_ignores=[])))
        for scope in top:
            timed = module.scope()
            _learn(timed, _assignments(scope))
            for statement in ast.walk(scope):
                if (
                    isinstance(statement, ast.Assert)
                    and _bounds(statement.test, timed)
                    and not _marked(lines, statement)
                ):
                    yield statement


def _constant(node: ast.AST) -> bool:
    """Whether `node` is a number the test chose (`1.5`, `within`, `2 * LIMITS.timeout_seconds`, `[0]`), rather
    than a value read from what is tested (`record.updated_at`), which a comparison orders a clock reading with."""
    if isinstance(node, (ast.Constant, ast.Name)):
        return True
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id.isupper()
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, (ast.List, ast.Tuple)):
        return all(_constant(item) for item in node.elts)
    return False


def _bounds(test: ast.AST, timed: _Timed) -> bool:
    """Whether `test` bounds a timed value by a constant: from above, or exactly."""
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for left, op, right in zip(sides, node.ops, sides[1:], strict=False):
            low, high = (right, left) if isinstance(op, LOWER) else (left, right)
            if isinstance(op, (*UPPER, *LOWER)) and timed.holds(low) and not timed.holds(high) and _constant(high):
                return True
            if isinstance(op, EQUAL) and any(
                timed.holds(one) and not timed.holds(other) and _constant(other)
                for one, other in ((left, right), (right, left))
            ):
                return True
    return False


def _marked(lines: list[str], statement: ast.stmt) -> bool:
    """Whether the statement, or the line above it, says why its bound is fine."""
    span = lines[max(0, statement.lineno - 2) : statement.end_lineno or statement.lineno]
    return any(MARKER in line and line.split(MARKER, 1)[1].strip() for line in span)


def unexplained_time_bounds(sources: dict[str, str]) -> list[str]:
    """`path:line: assertion` for each assertion bounding wall-clock time without a `# timing-ok:` reason."""
    # Only modules that read a clock know timed values of their own; others can only hold those they import.
    clocked = {path: _Module(path, source) for path, source in sources.items() if CLOCK_CALL.search(source)}
    for module in clocked.values():
        module.learn_locally()
    knowing = {path for path, module in clocked.items() if module.timed.functions or module.timed.attributes}
    modules = dict(clocked)
    for path, source in sources.items():
        imported = {found.replace(".", "/") + ".py" for found in IMPORT_FROM_TESTS.findall(source)}
        if path not in modules and imported & knowing:
            modules[path] = _Module(path, source)
    for module in modules.values():
        module.learn_from(modules)
    return [
        f"{module.path}:{statement.lineno}: {ast.get_source_segment(module.source, statement)}"
        for module in modules.values()
        for statement in module.unexplained()
    ]


def test_no_test_bounds_wall_clock_time_without_saying_why() -> None:
    sources = {str(path.relative_to(TESTS.parent)): path.read_text() for path in sorted(TESTS.rglob("*.py"))}
    found = unexplained_time_bounds(sources)
    assert not found, (
        "assertions that bound wall-clock time fail on a busy machine: assert an order, a count or a state, or a\n"
        f"bound far from the expected value marked '{MARKER} <why>':\n  " + "\n  ".join(found)
    )


def test_the_scan_finds_wall_clock_bounds_and_accepts_orders_lower_bounds_and_reasons() -> None:
    sample = """
import time

def measured():
    started = time.monotonic()
    return time.monotonic() - started

def test_sample(server):
    started = time.monotonic()
    elapsed = time.monotonic() - started
    assert elapsed < 1.5
    assert time.monotonic() - started < 3
    answers = []
    answers.append(round(time.monotonic() - started))
    assert answers == [0]
    assert measured() < 0.2
    assert max(server.lasted) < 2.8
    assert 0.9 < elapsed
    assert time.monotonic() < started + 10
    assert len(answers) == 1
    assert server.acquire(time.monotonic() + 10) == True
    assert server.record.updated_at >= started
    assert elapsed < 60  # timing-ok: a guard against hanging
    # timing-ok: ten times the deadline
    assert elapsed < 20

def helper(server):
    server.lasted.append(time.monotonic())
"""
    found = [line.split(": ", 1)[1] for line in unexplained_time_bounds({"sample.py": sample})]
    assert found == [
        "assert elapsed < 1.5",
        "assert time.monotonic() - started < 3",
        "assert answers == [0]",
        "assert measured() < 0.2",
        "assert max(server.lasted) < 2.8",
    ]
