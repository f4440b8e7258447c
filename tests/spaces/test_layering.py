"""spaces is the lowest of the apps: no module of it imports annotation, learning or the site.

import-linter (``make lint``) checks the same contract on the import graph; this test also runs
with the suite. ``audit`` is out too: it imports ``annotation`` (its signals and its foreign key
to Study), so importing it from spaces would reach annotation indirectly.
"""

import ast
from pathlib import Path

SPACES = Path(__file__).resolve().parents[2] / "spaces"
FORBIDDEN = {"annotation", "learning", "fairmetric_site", "audit"}


def imported_modules(path: Path) -> set[str]:
    """Every absolute import of the module, function-local ones included."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_spaces_imports_nothing_from_the_apps_above_it():
    modules = sorted(SPACES.rglob("*.py"))
    assert len(modules) > 10
    offenders = [
        f"{path.relative_to(SPACES.parent)}: {name}"
        for path in modules
        for name in sorted(imported_modules(path))
        if name.split(".")[0] in FORBIDDEN
    ]
    assert not offenders, offenders
