"""docs/DESIGN.md is the map of the code: every path and name it gives must exist.

Checked: each `backticked` path (a file or folder of the repository), each `path.py: name, …`
(names defined in that file: functions, classes, assignments, ``Class.method``), each dotted name
of one of our packages (``learning.versions.drift`` or ``annotation.hooks.feedback_changed``),
and the first word of every line of the room tree (a path). A renamed module or function that
the map still names fails here.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DESIGN = ROOT / "docs" / "DESIGN.md"
PACKAGES = {
    "fairmetric_site",
    "experiments",
    "learning",
    "annotation",
    "spaces",
    "accounts",
    "audit",
    "common",
    "tests",
    "benchmarks",
    "loadtest",
}
PATH_LIKE = re.compile(r"^[\w.-]+(/[\w.-]*)+$")
DOTTED = re.compile(r"^[a-z_]+(\.[A-Za-z_]\w*)+$")


@cache
def defined_names(path: Path) -> frozenset[str]:
    """Top-level functions, classes and assigned names of a module, and ``Class.member``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    names.add(f"{node.name}.{member.name}")
                elif isinstance(member, ast.Assign | ast.AnnAssign):
                    targets = member.targets if isinstance(member, ast.Assign) else [member.target]
                    names |= {f"{node.name}.{t.id}" for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.ImportFrom):  # re-exported names count as defined
            names |= {alias.asname or alias.name for alias in node.names}
    return frozenset(names)


def module_file(dotted: str) -> tuple[Path | None, list[str]]:
    """The file of the longest module prefix of ``dotted``, and the attribute path after it."""
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        base = ROOT.joinpath(*parts[:end])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate, parts[end:]
    return None, parts


@cache
def task_names() -> frozenset[str]:
    """Celery task names (``learning.sweep``): the ``name=`` of every task."""
    found = set()
    for path in ROOT.glob("*/**/tasks.py"):
        if ".venv" not in path.parts:
            found |= set(re.findall(r'name="([\w.]+)"', path.read_text()))
    for path in ROOT.glob("*/**/*.py"):  # names kept in constants (``EMBED_TASK = "…"``)
        if ".venv" not in path.parts and "migrations" not in path.parts:
            found |= set(re.findall(r'^[A-Z_]*TASK = "([\w.]+)"', path.read_text(), re.M))
    return frozenset(found)


def model_exists(app: str, model: str) -> bool:
    """``app.Model`` as Django names models: a class in the app's models module(s)."""
    files = [ROOT / app / "models.py", *sorted((ROOT / app / "models").glob("*.py"))]
    return any(f.is_file() and model in defined_names(f) for f in files)


def problems_of(span: str) -> list[str]:
    span = span.strip()
    if span.startswith(("../", "http", "/")) or " " in span.split(":")[0]:
        return []
    head, _, names = span.partition(": ")
    head = head.strip()
    if PATH_LIKE.match(head) and head.split("/")[0] in PACKAGES | {"docs", "static", "templates"}:
        path = ROOT / head
        if not path.exists():
            return [f"{head}: no such file or folder"]
        if names and path.suffix == ".py":
            wanted = [n.strip().split("(")[0] for n in names.split(",") if n.strip()]
            return [
                f"{head}: {n} is not defined there"
                for n in wanted
                if re.fullmatch(r"[A-Za-z_][\w.]*", n) and n not in defined_names(path)
            ]
        return []
    if DOTTED.match(span) and span.split(".")[0] in PACKAGES - {"tests"}:
        if span in task_names():
            return []
        app, model = span.split(".")[:2]
        if model[0].isupper():
            return [] if model_exists(app, model) else [f"{span}: no model {app}.{model}"]
        path, rest = module_file(span)
        if path is None:
            return [f"{span}: no such module"]
        if (
            rest
            and ".".join(rest[:2]) not in defined_names(path)
            and rest[0] not in (defined_names(path))
        ):
            return [f"{span}: {rest[0]} is not defined in {path.relative_to(ROOT)}"]
    return []


def spans(text: str) -> list[str]:
    found = re.findall(r"`([^`\n]+)`", text)
    for block in re.findall(r"```\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            words = line.split()
            if words and "/" in words[0] and not words[0].startswith(("│", "▼", "┐", "┘")):
                found.append(words[0].rstrip(","))
    return found


def test_every_path_and_name_in_the_design_map_exists():
    text = DESIGN.read_text()
    problems = [problem for span in spans(text) for problem in problems_of(span)]
    assert not problems, "docs/DESIGN.md names what does not exist:\n" + "\n".join(problems)


def test_the_checker_catches_a_wrong_name():
    assert problems_of("learning/versions/drift.py: drift_between") == []
    assert problems_of("learning/versions/drift.py: no_such_function")
    assert problems_of("learning/no_such_room/")
    assert problems_of("learning.versions.no_such_module")
    assert problems_of("learning.versions.drift.no_such_name")
    assert problems_of("learning.versions.drift.drift_check") == []
