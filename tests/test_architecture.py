"""learning.core stays a numpy/scipy library: an allow-list check of every import in it.

import-linter (run by `make test`) forbids named modules; this test also catches a module of
the apps added later, or any third-party import other than numpy and scipy.
"""

import ast
import sys
from pathlib import Path

CORE = Path(__file__).resolve().parent.parent / "learning" / "core"
ALLOWED_THIRD_PARTY = {"numpy", "scipy"}


def imported_top_levels(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_core_imports_only_stdlib_numpy_scipy_and_itself():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for name in imported_top_levels(path):
            top = name.split(".")[0]
            if name.startswith("learning.core") or top == "__future__":
                continue
            if top in ALLOWED_THIRD_PARTY or top in sys.stdlib_module_names:
                continue
            offenders.append(f"{path.name}: {name}")
    assert not offenders, offenders
    assert list(CORE.glob("*.py")), "learning/core has no modules"
