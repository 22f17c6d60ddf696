"""The package's layers (docs/DESIGN.md, "Layer map"): each module imports only from its own layer
and the layers before it, the search never imports torch or SymPy, and torch stays in the layers
that need it. Checked on the source, including imports inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "dgsr"
#: In the order data flows; a module may import from its own layer and those before it.
LAYERS = ("core", "search", "policies", "neural", "training", "online", "estimator", "cli", "bench")
#: Imports that go up a layer on purpose, with the reason.
UPWARD_ALLOWED = {
    # load_policy turns the name "neural" (or a checkpoint path) into the neural policy; imported
    # only when asked for, so torch loads only then.
    ("policies.registry", "neural"),
}
TORCH_LAYERS = {"neural", "training", "online"}
#: Other modules that import torch, each for one stated reason.
TORCH_ALLOWED = {
    "cli.search", "cli.pretrain",  # entry points: set the process's torch thread count for their command
    "estimator.export",  # to_torch(): the user asked for a torch function
    "bench.methods",  # one thread per method in benchmark runs (CONTRACTS §2)
    "policies.device",  # checks the neural policy's torch device (only called for that policy)
}


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        parts = [p for p in rel.parts if p != "__init__"]
        found.append((".".join(parts), path))
    return found


def _imports(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
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
        up = LAYERS.index(target) > LAYERS.index(own)
        sub = ".".join(module.split(".")[:2])
        assert not up or (sub, target) in UPWARD_ALLOWED, f"{module} imports {name} from a later layer"


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
