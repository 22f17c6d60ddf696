"""The package's layers (docs/DESIGN.md, "Layer map"): each module imports only from its own layer
and the layers before it, the search never imports torch or SymPy, and torch stays in the layers
that need it. Checked on the source, including imports inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dgsr"
#: In the order data flows; a module may import from its own layer and those before it. No
#: exception: an import from a later layer fails the test wherever it is.
LAYERS = ("runtime", "core", "search", "policies", "neural", "training", "online", "estimator", "cli", "bench")
TORCH_LAYERS = {"neural", "training", "online"}
#: Other modules that import torch, each for one stated reason.
TORCH_ALLOWED = {
    "estimator.export",  # to_torch(): the user asked for a torch function
    "bench.methods",  # the neural method loads torch before its thread pool is sized (CONTRACTS §2)
}
#: Standard modules whose use changes the process's state (signal handlers, the collector's
#: thresholds, native thread pools): process infrastructure, which lives in ``runtime/``. Outside
#: it only where named in :data:`PROCESS_MODULES_ALLOWED`.
PROCESS_MODULES = {"signal", "gc", "threadpoolctl"}
PROCESS_MODULES_ALLOWED = {
    ("search.workers", "signal"),  # a pool worker's own handlers (its process, for its life) and its stop signal
    ("bench.runner", "signal"),  # names the signal that ended a benchmark run
}
#: The numerics write no files and arm no alarms themselves: atomic writes and time caps are runtime's.
CORE_FORBIDDEN = PROCESS_MODULES | {"tempfile"}
#: Calls that change process-wide state; only ``runtime/`` makes them (inside ``with`` blocks that
#: undo them), besides a pool worker's setup of its own process.
PROCESS_CALLS = {("signal", "signal"), ("gc", "set_threshold"), ("gc", "disable"), ("gc", "freeze")}
PROCESS_CALLS_ALLOWED = {"search.workers"}


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        found.append((".".join(parts), path))
    return found


def _imports(path: Path) -> list[str]:
    """Every module ``path`` imports, relative imports resolved to ``dgsr.`` names."""
    package = path.relative_to(SRC.parent).with_suffix("").parts[:-1]  # the package holding the module
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else ()
            names.append(".".join([*base, *([node.module] if node.module else [])]))
    return names


def _layer(module: str) -> str | None:
    head = module.split(".")[0]
    return head if head in LAYERS else None


def test_every_subpackage_is_a_known_layer():
    subpackages = {p.name for p in SRC.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages - {"examples"} == set(LAYERS)


@pytest.mark.parametrize("module, path", _modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_imports_follow_the_layer_order(module, path):
    own = _layer(module)
    for name in _imports(path):
        if own is None or not name.startswith("dgsr."):
            continue
        target = _layer(name[len("dgsr."):])
        if target is None:
            continue
        assert LAYERS.index(target) <= LAYERS.index(own), f"{module} imports {name} from a later layer"


def test_relative_imports_are_resolved():
    # bench/ imports its siblings relatively: the layer check must see those imports too.
    assert "dgsr.bench.datasets" in _imports(SRC / "bench" / "runner.py")
    assert "dgsr.online.backends" in _imports(SRC / "online" / "__init__.py")


@pytest.mark.parametrize("module, path", [(m, p) for m, p in _modules() if _layer(m) == "runtime"],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_runtime_imports_nothing_from_the_other_layers(module, path):
    others = [n for n in _imports(path) if n.startswith("dgsr.") and not n.startswith("dgsr.runtime")]
    assert not others, f"{module} imports {others}"


@pytest.mark.parametrize("module, path", _modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_process_infrastructure_stays_in_runtime(module, path):
    if _layer(module) == "runtime":
        return
    for name in _imports(path):
        root = name.split(".")[0]
        if root in PROCESS_MODULES:
            assert (module, root) in PROCESS_MODULES_ALLOWED, f"{module} imports {root}: use dgsr.runtime"
        if _layer(module) == "core":
            assert root not in CORE_FORBIDDEN, f"{module} imports {root}: use dgsr.runtime"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name):
            call = (node.func.value.id, node.func.attr)
            assert call not in PROCESS_CALLS or module in PROCESS_CALLS_ALLOWED, f"{module} calls {'.'.join(call)}"
            assert call != ("os", "replace") or _layer(module) != "core", f"{module} writes files: use runtime.files"
        if isinstance(node, ast.Assign):  # warnings.showwarning = ...: only runtime.warning_display
            for target in node.targets:
                assert not (isinstance(target, ast.Attribute) and target.attr == "showwarning"), \
                    f"{module} reassigns warnings.showwarning: use dgsr.runtime.warning_display"


@pytest.mark.parametrize("module, path", _modules(), ids=lambda v: v if isinstance(v, str) else "")
def test_torch_and_sympy_stay_out_of_the_layers_that_must_not_need_them(module, path):
    roots = {name.split(".")[0] for name in _imports(path)}
    layer = _layer(module)
    if "torch" in roots:
        assert layer in TORCH_LAYERS or module in TORCH_ALLOWED, f"{module} imports torch"
    if layer == "search":
        assert "sympy" not in roots, f"{module} imports sympy (CONTRACTS §1: never per evaluation)"


def test_the_top_level_is_small():
    top = sorted(p.name for p in SRC.glob("*.py"))
    assert len(top) <= 12, top
    too_long = {str(p.relative_to(SRC)): n for p in SRC.rglob("*.py")
                if (n := len(p.read_text().splitlines())) > 500}
    assert not too_long


def test_importing_dgsr_adds_no_import_hook():
    # The 0.1.0 path finder is gone (docs/decisions/2026-11-28-legacy-paths-removed.md): importing
    # the package must leave the interpreter's import machinery as it found it.
    import subprocess
    import sys

    code = ("import sys; before = list(sys.meta_path), list(sys.path_hooks); import dgsr, dgsr.estimator.regressor; "
            "print(before == (list(sys.meta_path), list(sys.path_hooks)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "True"
