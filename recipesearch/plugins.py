"""User code in recipes and searches: entries named by import path, and entries registered in this process.

A recipe or space names a model, dataset or method of the user's own by its import path, in the
entry-point convention ``module:attribute``::

    model: {name: "acme.nets:tiny_convmixer", depth: 4}
    data: {name: "acme.data:load", root: ~/data}
    algorithms: {"acme.tricks:MyMethod": {strength: 0.5}}

The module is found next to the space or recipe file, in the working directory, or installed
(``add_search_dir``). Entries registered with ``register_model`` / ``register_dataset`` /
``register_algorithm`` from the user's own code (``__main__`` or a module of theirs) are user code too.

A search sends both kinds to its trials (``shipping.py``): this module only resolves and describes them
(``provenance``: import name, file hash, package version), and has no Ray import. The registries resolve
import paths through it, so it imports none of them: what the user registered in them, and what a module of
theirs offers, is ``user_entries.py``, above both.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import inspect
import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from recipesearch.errors import ConfigError, UserError, one_line

SEP = ":"
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_OWN_PACKAGE = "recipesearch"

# Modules named by ``plugins=[...]`` / ``--plugin`` in this process: shipped to trials and recorded.
_PLUGINS: dict[str, None] = {}


def is_import_path(name: object) -> bool:
    """``module:attribute``: a name that is imported rather than looked up in a registry."""
    return isinstance(name, str) and SEP in name


def looks_like_import_path(text: object) -> bool:
    """``module:attribute`` with both sides dotted identifiers (a time like 12:30 or a URL is not)."""
    if not is_import_path(text):
        return False
    module, _, attribute = str(text).partition(SEP)
    return bool(_DOTTED.match(module) and _DOTTED.match(attribute))


def add_search_dir(path: str | Path) -> None:
    """Make modules in ``path`` importable (the folder of the space or recipe file being read)."""
    folder = str(Path(path).expanduser().resolve())
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _ensure_working_dir() -> None:
    # The ``recipesearch`` console script runs with its own bin folder as sys.path[0], not the working
    # directory: a module next to where the user runs the command must import as it would in ``python -m``.
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)


def split_import_path(path: str, field: str) -> tuple[str, str]:
    module, _, attribute = path.partition(SEP)
    if not (_DOTTED.match(module) and _DOTTED.match(attribute)):
        raise ConfigError(field, f"{path!r} is not an import path: expected module:attribute, "
                                 "e.g. acme.nets:tiny_convmixer")
    return module, attribute


def import_user_module(module: str, field: str) -> ModuleType:
    """Import ``module`` as user code; a missing module or one that raises on import is one ConfigError line."""
    _ensure_working_dir()
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise ConfigError(field, f"cannot import {module!r}: no such module next to the space or recipe file, "
                                     f"in the working directory ({os.getcwd()}) or installed") from None
        raise ConfigError(field, f"importing {module!r} failed: {one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the user's module-level code: any error is theirs to read
        raise ConfigError(field, f"importing {module!r} failed: {one_line(exc)}") from None
    return mod


def resolve(path: str, field: str) -> Any:
    """The object at ``module:attribute`` (attribute may be dotted: ``Class.factory``)."""
    module, attribute = split_import_path(path, field)
    obj: Any = import_user_module(module, field)
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(field, f"module {module!r} has no attribute {attribute!r}") from None
    return obj


def describe_call_error(exc: BaseException) -> str:
    """One line for an exception raised by user code the tool called (a factory, a loader): where in it."""
    return one_line(exc)


# ---- signatures --------------------------------------------------------------------------------------


def accepted_options(fn: Any, reserved: tuple[str, ...] = ()) -> tuple[tuple[str, ...], bool]:
    """(named keyword options of ``fn`` other than ``reserved``, whether it takes ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return (), True  # a builtin or C callable: nothing to check against
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    options = tuple(p.name for p in params.values() if p.kind in named and p.name not in reserved)
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    return options, var_kw


def check_options(fn: Any, given: dict[str, Any], field: str, what: str, reserved: tuple[str, ...] = ()) -> None:
    """Each key of ``given`` must be a keyword ``fn`` takes; one line naming ``field.key`` otherwise."""
    options, var_kw = accepted_options(fn, reserved)
    if var_kw:
        return
    for key in given:
        if key not in options:
            allowed = ", ".join(options) or "none"
            raise ConfigError(f"{field}.{key}", f"unknown option for {what}; allowed: {allowed}")


def missing_required(fn: Any, given: dict[str, Any], supplied: tuple[str, ...] = ()) -> list[str]:
    """Required parameters of ``fn`` that neither ``given`` nor the tool (``supplied``) passes."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params.values() if p.kind in kinds and p.default is inspect.Parameter.empty
            and p.name not in given and p.name not in supplied]


# ---- which code is the user's -------------------------------------------------------------------------


def is_user_object(obj: Any) -> bool:
    """Defined outside recipesearch (a user's registration, from their module or ``__main__``)."""
    module = getattr(obj, "__module__", None) or ""
    return not (module == _OWN_PACKAGE or module.startswith(_OWN_PACKAGE + "."))


def plugin_modules() -> list[str]:
    """The modules ``import_plugins`` imported in this process, in the order first named."""
    return list(_PLUGINS)


def import_plugins(modules: list[str] | tuple[str, ...], field: str = "plugins") -> list[str]:
    """Import each module (``plugins=[...]``): their ``register_*`` calls run, and they count as user code."""
    names = []
    for module in modules:
        name = module.__name__ if isinstance(module, ModuleType) else module
        if not isinstance(name, str) or not _DOTTED.match(name):
            raise UserError(f"{field}: {module!r} is not a module name (e.g. acme.nets)")
        import_user_module(name, field)
        _PLUGINS.setdefault(name, None)
        names.append(name)
    return names


# ---- provenance --------------------------------------------------------------------------------------


def module_file(module: str) -> Path | None:
    mod = sys.modules.get(module)
    file = getattr(mod, "__file__", None)
    return Path(file) if file else None


def module_root(module: str) -> Path | None:
    """What ships the module to another machine: its top-level package folder, or its single .py file."""
    top = module.split(".")[0]
    file = module_file(top)
    if file is None:
        return None
    return file.parent if file.name == "__init__.py" else file


def is_installed(module: str) -> bool:
    """In site-packages (a pip install), rather than a folder of the user's."""
    file = module_file(module)
    return file is not None and any(part in ("site-packages", "dist-packages") for part in file.parts)


def module_hash(module: str) -> str | None:
    """sha256 (16 hex digits) of the module's source: its file, or every .py file of its package folder."""
    file = module_file(module)
    if file is None or not file.exists():
        return None
    files = sorted(file.parent.rglob("*.py")) if file.name == "__init__.py" else [file]
    digest = hashlib.sha256()
    for f in files:
        digest.update(str(f.relative_to(file.parent)).encode())
        digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


def package_version(module: str) -> str | None:
    top = module.split(".")[0]
    for dist in importlib.metadata.packages_distributions().get(top, []):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def provenance(modules: list[str]) -> list[dict[str, Any]]:
    """Per user module (``user_entries.user_modules`` finds those in use): import name, file, source hash,
    package version (installed ones only)."""
    rows = []
    for module in modules:
        file = module_file(module)
        rows.append({"module": module, "file": str(file) if file else None, "sha256": module_hash(module),
                     "version": package_version(module) if is_installed(module) else None})
    return rows


def changed_modules(recorded: list[dict[str, Any]] | None) -> list[str]:
    """Of the recorded user modules, those whose source differs now (imported to compare; one that no
    longer imports counts as changed)."""
    changed = []
    for row in recorded or []:
        module = row.get("module")
        if not module:
            continue
        try:
            import_user_module(module, "provenance")
        except UserError:
            changed.append(module)
            continue
        if row.get("sha256") and module_hash(module) != row["sha256"]:
            changed.append(module)
    return changed


def changed_warning(recorded: list[dict[str, Any]] | None, what: str) -> str | None:
    changed = changed_modules(recorded)
    if not changed:
        return None
    names = ", ".join(changed)
    return f"warning: user module(s) {names} changed since {what}: results may differ"


# ---- provenance in files: exported recipes, and the folders that hold the code again -----------------------

PROVENANCE_PREFIX = "user code: "


def provenance_lines(rows: list[dict[str, Any]] | None) -> list[str]:
    """Header lines of an exported recipe, one per user module (``parse_provenance`` reads them back)."""
    out = []
    for row in rows or []:
        version = f" version {row['version']}" if row.get("version") else ""
        out.append(f"{PROVENANCE_PREFIX}{row.get('module')} sha256 {row.get('sha256') or '-'}{version} "
                   f"(file {row.get('file') or '-'})")
    return out


_PROVENANCE_LINE = re.compile(r"^#\s*" + re.escape(PROVENANCE_PREFIX) + r"(\S+) sha256 (\S+)(?: version (\S+))?"
                              r" \(file (.*)\)\s*$")


def parse_provenance(text: str) -> list[dict[str, Any]]:
    """The user-code rows a recipe file's header records (``provenance_lines``)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("#"):
            break  # the header ends where the YAML starts
        m = _PROVENANCE_LINE.match(line)
        if m:
            rows.append({"module": m.group(1), "sha256": None if m.group(2) == "-" else m.group(2),
                         "version": m.group(3), "file": None if m.group(4) == "-" else m.group(4)})
    return rows


def user_code_dirs(rows: list[dict[str, Any]] | None) -> list[str]:
    """The folders from which the recorded modules were imported (a module ``acme.nets`` in
    ``/x/acme/nets.py`` came from ``/x``), for a later command to import them from the same place."""
    dirs = []
    for row in rows or []:
        file, module = row.get("file"), str(row.get("module") or "")
        if not file or not module or row.get("version"):
            continue  # installed: importable as it is
        path = Path(file)
        depth = module.count(".") + (1 if path.name == "__init__.py" else 0)
        folder = path.parents[depth] if depth < len(path.parents) else path.parent
        if folder.is_dir() and str(folder) not in dirs:
            dirs.append(str(folder))
    return dirs
