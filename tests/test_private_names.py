"""Modules use each other's public names only (issue 49): no module of the package imports another's
underscored name or reads one off another module, and every name taken from a kernel module
(``dgsr.core.kernels``) is listed in that module's ``__all__``. Checked on the source with ``ast``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "dgsr"
KERNELS = "dgsr.core.kernels"


def _module_file(dotted: str) -> Path | None:
    """The source file of the package module ``dotted`` (None when it is not one)."""
    path = SRC.joinpath(*dotted.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The absolute module a ``from ... import`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = importer.split(".")
    base = base[:len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _uses(path: Path) -> Iterator[tuple[int, str, str]]:
    """:func:`_uses_in` of a source file."""
    importer = _module_name(path) if path.is_relative_to(SRC) else ""
    return _uses_in(path.read_text(encoding="utf-8"), importer, path.name == "__init__.py")


def _uses_in(source_text: str, importer: str, is_package: bool) -> Iterator[tuple[int, str, str]]:
    """``(line, module, name)`` for each name a module takes from a dgsr module: the names of
    ``from dgsr.x import name`` (where ``name`` is not itself a module) and ``module.name`` reads
    on a name bound to a dgsr module."""
    tree = ast.parse(source_text)
    modules: dict[str, str] = {}  # local name -> the dgsr module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dgsr":
                    modules[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else "dgsr"
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, importer, is_package)
            if source.split(".")[0] != "dgsr":
                continue
            for alias in node.names:
                if _module_file(f"{source}.{alias.name}") is not None:
                    modules[alias.asname or alias.name] = f"{source}.{alias.name}"
                elif alias.name != "*":
                    yield node.lineno, source, alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, base = [node.attr], node.value
            while isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            if not isinstance(base, ast.Name) or base.id not in modules:
                continue
            dotted = modules[base.id]
            for attr in reversed(chain):  # walk down through submodules to the first non-module
                if _module_file(f"{dotted}.{attr}") is None:
                    yield node.lineno, dotted, attr
                    break
                dotted = f"{dotted}.{attr}"


def _sources(*folders: Path) -> list[Path]:
    return sorted(p for folder in folders for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _all_of(module: str) -> set[str] | None:
    """The names in ``module``'s ``__all__`` (None when it has none)."""
    tree = ast.parse(_module_file(module).read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return set(ast.literal_eval(node.value))
    return None


@pytest.mark.parametrize("path", _sources(PACKAGE), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_uses_another_modules_private_names(path):
    own = _module_name(path)
    leaks = [f"line {line}: {module}.{name}" for line, module, name in _uses(path)
             if _private(name) and module != own]
    assert not leaks, f"{path.relative_to(ROOT)} uses private names of other modules: {leaks}"


def test_every_kernel_module_lists_its_public_names():
    modules = [_module_name(p) for p in _sources(PACKAGE / "core" / "kernels") if p.name != "__init__.py"]
    assert modules
    missing = [m for m in modules if _all_of(m) is None]
    assert not missing, f"kernel modules without __all__: {missing}"


@pytest.mark.parametrize("path", _sources(PACKAGE, ROOT / "tests", ROOT / "bench"),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_names_taken_from_a_kernel_module_are_in_its_all(path):
    own = _module_name(path) if path.is_relative_to(SRC) else ""
    unlisted = [f"line {line}: {module}.{name}" for line, module, name in _uses(path)
                if module.startswith(KERNELS + ".") and module != own and name not in (_all_of(module) or ())]
    assert not unlisted, f"{path.relative_to(ROOT)} takes names a kernel module does not list in __all__: {unlisted}"


def test_the_check_sees_private_imports_and_reads():
    probe = ("from dgsr.core.linear_terms import _KIND\n"
             "from dgsr.core import inner_fit\n"
             "import dgsr.core.kernels.fit as fit\n"
             "x = inner_fit._TAU + fit._lm + inner_fit.fit_inner_constants\n")
    found = {(module, name) for _, module, name in _uses_in(probe, "dgsr.core.probe", False)}
    assert found == {("dgsr.core.linear_terms", "_KIND"), ("dgsr.core.inner_fit", "_TAU"),
                     ("dgsr.core.kernels.fit", "_lm"), ("dgsr.core.inner_fit", "fit_inner_constants")}
