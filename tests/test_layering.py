"""Who imports whom: every import in runtime/, plugins/ and bot.py, read with ast, against the layers
docs/ARCHITECTURE.md states ("Who imports whom"). The rules live in the tables below, once.

Every import counts: at module level, inside a function, under ``if TYPE_CHECKING:``. A relative
import is resolved against its package.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# The runtime's packages by layer: a package imports only from lower layers (and from itself).
LAYERS: tuple[tuple[str, ...], ...] = (
    (
        "config",
        "tools",
        "addressing",
        "quiet",
        "urgency",
        "stages",
        "traces",
        "unicode_safe",
        "logs",
        "lifetime",
    ),
    ("kernel",),
    ("store", "llm", "ports", "groups", "quiet_history", "mcp"),
    ("episodes", "context", "commands"),
    ("memory", "extensions"),
    ("app", "replay"),
    ("console",),
)
# What no module under runtime/ imports, not even for type checking: the edge, the entry point, the
# edge's framework, the tests and the benchmarks.
RUNTIME_NEVER = ("plugins", "bot", "nonebot", "tests", "bench")
# The kernel is pure: the standard library, itself and these libraries; the deferred ones only inside
# a function (loaded on first use, off the import path).
KERNEL_LIBRARIES = ("ahocorasick",)
KERNEL_DEFERRED = ("jieba",)
# The kernel reads config sections only in its from_config builders, naming the schema for type
# checking only.
KERNEL_TYPE_CHECKING_ONLY = ("runtime.config",)
# The edge never imports the running bot or the console: bot.py hands it the factories.
EDGE_NEVER = ("runtime.app", "runtime.console")
# Runtime tests run against a fake edge: importing them loads no NoneBot and nothing of the edge.
EDGE_FREE_TESTS = (
    "app",
    "context",
    "episodes",
    "extensions",
    "kernel",
    "llm",
    "mcp",
    "memory",
    "replay",
    "store",
    "tools",
)


@dataclass(frozen=True, slots=True)
class Import:
    module: str  # the importing module, dotted
    target: str  # the imported module, dotted
    line: int
    type_checking: bool  # under ``if TYPE_CHECKING:``
    deferred: bool  # inside a function

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(path: Path) -> list[Import]:
    module = _module_name(path)
    return imports_in(path.read_text(encoding="utf-8"), module, package=path.name == "__init__.py")


def imports_in(source: str, module: str, *, package: bool = False) -> list[Import]:
    """The imports of ``source`` as module ``module`` (``package``: it is a package's ``__init__``)."""
    package_name = module if package else module.rpartition(".")[0]
    found: list[Import] = []

    def visit(node: ast.AST, type_checking: bool, deferred: bool) -> None:
        if isinstance(node, ast.Import):
            found.extend(Import(module, a.name, node.lineno, type_checking, deferred) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package_name.split(".")
                base = parts[: len(parts) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            found.append(Import(module, target, node.lineno, type_checking, deferred))
        for child in ast.iter_child_nodes(node):
            visit(
                child,
                type_checking or (isinstance(node, ast.If) and _is_type_checking(node.test)),
                deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda),
            )

    visit(ast.parse(source, filename=module), False, False)
    return found


def all_imports(*roots: str) -> list[Import]:
    out: list[Import] = []
    for root in roots:
        path = ROOT / root
        for file in [path] if path.suffix == ".py" else sorted(path.rglob("*.py")):
            out.extend(imports_of(file))
    return out


def _within(target: str, prefix: str) -> bool:
    return target == prefix or target.startswith(prefix + ".")


def _runtime_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "runtime" and len(parts) > 1 else None


def _layer(package: str) -> int:
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index
    raise AssertionError(f"runtime.{package} is in no layer: add it to LAYERS and to docs/ARCHITECTURE.md")


def layering_violations(imports: list[Import]) -> list[str]:
    problems: list[str] = []
    for imp in imports:
        source = _runtime_package(imp.module)
        if imp.module == "runtime" or source is None:
            if _within(imp.module, "plugins") and any(_within(imp.target, p) for p in EDGE_NEVER):
                problems.append(f"{imp}: the edge never imports the running bot")
            continue
        if any(_within(imp.target, never) for never in RUNTIME_NEVER):
            problems.append(f"{imp}: runtime/ never imports {imp.target.split('.')[0]}")
            continue
        target = _runtime_package(imp.target)
        if target is not None and target != source and _layer(target) >= _layer(source):
            problems.append(f"{imp}: runtime.{source} may import only lower layers")
        if source == "kernel":
            problems.extend(_kernel_violations(imp))
    return problems


def _kernel_violations(imp: Import) -> list[str]:
    top = imp.target.split(".")[0]
    if _within(imp.target, "runtime.kernel"):
        return []
    if any(_within(imp.target, name) for name in KERNEL_TYPE_CHECKING_ONLY):
        return [] if imp.type_checking else [f"{imp}: the kernel names {imp.target} for type checking only"]
    if top in sys.stdlib_module_names or top == "__future__" or top in KERNEL_LIBRARIES:
        return []
    if top in KERNEL_DEFERRED:
        return [] if imp.deferred else [f"{imp}: the kernel imports {top} only inside a function"]
    return [f"{imp}: the kernel imports only the standard library, itself and its declared libraries"]


def test_the_import_graph_keeps_the_layers() -> None:
    imports = all_imports("runtime", "plugins", "bot.py")
    assert len(imports) > 500  # the scan found the code
    assert layering_violations(imports) == []


def test_every_runtime_package_is_in_a_layer() -> None:
    packages = {p.name for p in (ROOT / "runtime").iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    packages |= {p.stem for p in (ROOT / "runtime").glob("*.py") if p.stem not in {"__init__", "__main__"}}
    for package in sorted(packages):
        _layer(package)


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        (
            "if TYPE_CHECKING:\n    from plugins.greywind.gateway import EdgeContext\n",
            "never imports plugins",
        ),
        ("def f():\n    from plugins.greywind.notices import Recalled\n", "never imports plugins"),
        ("import nonebot.adapters\n", "never imports nonebot"),
        ("from runtime.app.runtime import Runtime\n", "only lower layers"),
        ("from ..app import Runtime\n", "only lower layers"),
    ],
)
def test_the_check_catches_what_the_layers_forbid(source: str, problem: str) -> None:
    found = layering_violations(imports_in(source, "runtime.store.probe"))
    assert len(found) == 1, found
    assert problem in found[0]


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("import jieba\n", "only inside a function"),
        ("import numpy\n", "declared libraries"),
        ("from runtime.config import GreyWindConfig\n", "type checking only"),
        ("from runtime.store import Store\n", "only lower layers"),
    ],
)
def test_the_kernel_stays_pure(source: str, problem: str) -> None:
    found = layering_violations(imports_in(source, "runtime.kernel.probe"))
    assert found
    assert problem in found[0]


def test_the_kernel_may_use_what_it_declares() -> None:
    source = (
        "import re\nimport ahocorasick\nfrom .events import EventStore\n"
        "def segment():\n    import jieba\n"
        "if TYPE_CHECKING:\n    from runtime.config.schema import GreyWindConfig\n"
    )
    assert layering_violations(imports_in(source, "runtime.kernel.lexicon.probe")) == []


def test_the_edge_does_not_import_the_running_bot() -> None:
    found = layering_violations(
        imports_in("from runtime.app import build_runtime\n", "plugins.greywind.probe")
    )
    assert found == ["plugins.greywind.probe:1 imports runtime.app: the edge never imports the running bot"]


def test_runtime_tests_import_no_nonebot_and_nothing_of_the_edge() -> None:
    """Imported in a fresh interpreter (this one has loaded the edge for its own tests)."""
    modules = sorted(
        _module_name(path)
        for package in EDGE_FREE_TESTS
        for path in (ROOT / "tests" / package).rglob("*.py")
        if "samples" not in path.parts  # sample extensions, some broken on purpose: loaded by the tests
    )
    assert "tests.app.conftest" in modules
    script = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('nonebot', 'plugins'))\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]


def import_cycles(imports: list[Import]) -> list[list[str]]:
    """The groups of modules that import each other in a circle (any import, TYPE_CHECKING too)."""
    modules = {imp.module for imp in imports}
    graph: dict[str, set[str]] = {}
    for imp in imports:
        target = imp.target
        while target and target not in modules:  # ``from a.b import C``: C may be a name in a.b
            target = target.rpartition(".")[0]
        if target and target != imp.module:
            graph.setdefault(imp.module, set()).add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                cycles.append(sorted(group))

    for module in sorted(modules):
        if module not in index:
            visit(module)
    return cycles


def test_the_parts_of_the_running_bot_do_not_import_each_other_in_a_circle() -> None:
    """A part is given what it uses (runtime.app.compose); it never imports the whole it belongs to."""
    assert import_cycles(all_imports("runtime/app")) == []


def test_the_cycle_check_finds_a_circle_through_type_checking() -> None:
    imports = [
        *imports_in("from runtime.app.loop import ActivationLoop\n", "runtime.app.runtime"),
        *imports_in("if TYPE_CHECKING:\n    from runtime.app.runtime import Runtime\n", "runtime.app.loop"),
    ]
    assert import_cycles(imports) == [["runtime.app.loop", "runtime.app.runtime"]]
