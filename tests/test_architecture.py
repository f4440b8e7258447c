"""Structural checks: learning.core stays a numpy/scipy library, modules and app folders stay
small, and our own code is imported at the top of a module, where import-linter sees it.

* learning.core: an allow-list check of every import in it. import-linter (run by `make test`)
  forbids named modules; this test also catches a module of the apps added later, or any
  third-party import other than numpy and scipy.
* No source module (any .py of the repository but .venv and migrations) passes 400 lines.
* No app folder (a package of ours, migrations/management/templatetags aside) holds more than
  15 modules.
* No function-local import of one of our packages in application code (import-linter does not
  see them), but in an ``AppConfig.ready()`` of an apps.py, where Django requires it.
"""

import ast
import os
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "learning" / "core"
ALLOWED_THIRD_PARTY = {"numpy", "scipy"}

# pyproject's import-linter root packages: the application code.
OUR_PACKAGES = (
    "fairmetric_site",
    "experiments",
    "learning",
    "annotation",
    "spaces",
    "accounts",
    "audit",
    "common",
)
MAX_MODULE_LINES = 400
MAX_MODULES_PER_FOLDER = 15
NOT_SOURCE = {".venv", "venv", "__pycache__", "node_modules", "migrations"}
NOT_SOURCE_AT_ROOT = {"media", "var", "staticfiles"}  # data folders (ruff's exclusions)
NOT_APP_FOLDERS = {"migrations", "management", "templatetags"}

# Exceptions, each with its reason (none today).
LONG_MODULES_ALLOWED: set[str] = set()
BIG_FOLDERS_ALLOWED: set[str] = set()


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


def source_modules() -> Iterator[Path]:
    """Every .py of the repository but .venv, migrations and the data folders (no symlinks)."""
    for folder, dirs, files in os.walk(ROOT):
        here = Path(folder)
        dirs[:] = sorted(
            d
            for d in dirs
            if not d.startswith(".")
            and d not in NOT_SOURCE
            and not (here == ROOT and d in NOT_SOURCE_AT_ROOT)
        )
        yield from (here / f for f in sorted(files) if f.endswith(".py"))


def app_folders() -> Iterator[Path]:
    """Every package folder of our apps, their migrations, management and templatetags aside."""
    for package in OUR_PACKAGES:
        for folder, dirs, _ in os.walk(ROOT / package):
            dirs[:] = sorted(d for d in dirs if d not in NOT_APP_FOLDERS and d != "__pycache__")
            if (Path(folder) / "__init__.py").exists():
                yield Path(folder)


def test_no_source_module_passes_400_lines():
    long, modules = {}, list(source_modules())
    assert len(modules) > 100, "the walk found too few modules"
    for path in modules:
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            long[path.relative_to(ROOT).as_posix()] = lines
    offenders = {name: n for name, n in long.items() if name not in LONG_MODULES_ALLOWED}
    assert not offenders, f"modules over {MAX_MODULE_LINES} lines (split them): {offenders}"


def test_no_app_folder_holds_more_than_15_modules():
    big = {}
    for folder in app_folders():
        modules = [p for p in folder.iterdir() if p.suffix == ".py" and p.is_file()]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            big[folder.relative_to(ROOT).as_posix()] = len(modules)
    offenders = {name: n for name, n in big.items() if name not in BIG_FOLDERS_ALLOWED}
    assert not offenders, (
        f"app folders with more than {MAX_MODULES_PER_FOLDER} modules (make rooms): {offenders}"
    )


def _ours(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The names of our packages ``node`` imports (relative imports are ours)."""
    if isinstance(node, ast.ImportFrom):
        name = "." * node.level + (node.module or "")
        return [name] if node.level or name.split(".")[0] in OUR_PACKAGES else []
    return [a.name for a in node.names if a.name.split(".")[0] in OUR_PACKAGES]


def local_imports_of_ours(source: str, name: str) -> list[str]:
    """``name:line function(): module`` for each import of ours inside a function of the module
    ``source``, but in an ``AppConfig.ready()`` of an apps.py."""
    found: list[str] = []
    apps_py = Path(name).name == "apps.py"

    def visit(node: ast.AST, function: str | None, in_class: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                ready = apps_py and in_class and child.name == "ready"
                visit(child, None if ready else child.name, False)
            elif isinstance(child, ast.ClassDef):
                visit(child, function, function is None)
            else:
                if function and isinstance(child, ast.Import | ast.ImportFrom):
                    found.extend(
                        f"{name}:{child.lineno} {function}(): {module}" for module in _ours(child)
                    )
                visit(child, function, False)

    visit(ast.parse(source, filename=name), None, False)
    return found


# No allow-list: annotation/ and spaces/ have no such import today (their apps.py ready() aside).
def test_application_code_imports_our_packages_at_the_top_only():
    offenders = [
        line
        for package in OUR_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in local_imports_of_ours(
            path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix()
        )
    ]
    assert not offenders, (
        "function-local imports of our packages (import-linter does not see them; import at "
        f"the top of the module): {offenders}"
    )


def test_the_local_import_check_finds_them_and_allows_only_apps_ready():
    """The check above finds what it looks for (a regression of it would pass silently)."""
    source = (
        "from learning import models\n"
        "class Config:\n"
        "    def ready(self):\n"
        "        from learning import tasks\n"
        "        import numpy\n"
        "def f():\n"
        "    from . import errors\n"
        "    def g():\n"
        "        import annotation.models, os\n"
    )
    assert local_imports_of_ours(source, "common/apps.py") == [
        "common/apps.py:7 f(): .",
        "common/apps.py:9 g(): annotation.models",
    ]
    assert local_imports_of_ours(source, "common/views.py")[0] == (
        "common/views.py:4 ready(): learning"
    )
