"""User code to every trial: the modules it imports, the entries registered in the driver, and the source.

A search's user code (``recipesearch/plugins.py``) reaches a trial three ways:

- **source**: every user module that is not installed (a folder beside the space file or in the working
  directory) travels in Ray's job ``runtime_env`` as ``py_modules`` (its top-level package folder, or its one
  .py file), which Ray uploads once and puts on each worker's ``sys.path``, on every node;
- **imports**: the trial imports those modules before it reads its recipe (``install``), so their own
  ``register_*`` calls run there too;
- **entries registered in the driver** (``register_model`` in a script, ``plugins=[...]``) travel pickled
  with cloudpickle: by reference when their module is importable, by value when they live in ``__main__``.

``check_nodes`` imports and unpickles all of it on every node of the cluster before the first trial, so a
module that imports here but not there is one line, not a search of failed trials.
"""
from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from recipesearch import plugins
from recipesearch.errors import UserError
from recipesearch.user_entries import registered_user_entries, user_modules


@dataclass(frozen=True)
class Shipment:
    modules: tuple[str, ...] = ()  # imported in every trial, first
    registered: bytes | None = None  # cloudpickle of {kind: {name: entry}}
    py_modules: tuple[str, ...] = ()  # local paths for Ray's runtime_env
    provenance: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.modules or self.registered)

    def payload(self) -> dict[str, Any] | None:
        """What a trial's config carries (``config["plugins"]``); None without user code."""
        if not self:
            return None
        return {"modules": list(self.modules), "registered": self.registered}

    def runtime_env(self) -> dict[str, Any]:
        return {"py_modules": list(self.py_modules)} if self.py_modules else {}


def collect(named: list[str] | tuple[str, ...] = ()) -> Shipment:
    """The user code of a search: the modules ``named`` (its import paths'), this process's plugins and
    registered entries; a registered entry that cannot be pickled is one line naming it."""
    import cloudpickle

    entries = registered_user_entries()
    try:
        registered = cloudpickle.dumps(entries) if entries else None
    except Exception:  # noqa: BLE001 - whatever pickling raises: find the entry that cannot travel, and name it
        for kind, by_name in entries.items():
            for name, obj in by_name.items():
                try:
                    cloudpickle.dumps(obj)
                except Exception as exc:  # noqa: BLE001
                    raise UserError(f"{kind} {name!r} is registered in this process but cannot be sent to Ray "
                                    f"workers ({type(exc).__name__}: {exc}); define it in a module beside the space "
                                    "file and name it by import path") from None
        raise
    modules = tuple(user_modules(named))
    roots: list[str] = []
    for module in modules:
        root = plugins.module_root(module)
        if root is not None and not plugins.is_installed(module) and str(root) not in roots:
            roots.append(str(root))
    return Shipment(modules, registered, tuple(roots), plugins.provenance(list(modules)))


_INSTALLED: set[bytes] = set()  # payloads this process installed already (Tune reuses its actors)


def install(payload: dict[str, Any] | None) -> None:
    """In a trial's process: import the user modules, register the driver's entries (names already here kept)."""
    if not payload:
        return
    for module in payload.get("modules") or ():
        plugins.import_user_module(module, "plugins")
    blob = payload.get("registered")
    if not blob or blob in _INSTALLED:
        return
    try:
        entries = pickle.loads(blob)
    except Exception as exc:  # noqa: BLE001 - e.g. a module the entry's pickle refers to is missing here
        raise UserError(f"plugins: the entries registered in the driver do not load here: "
                        f"{plugins.describe_call_error(exc)}") from None
    from recipesearch.algorithms.registry import install_algorithm
    from recipesearch.data.registry import install_dataset
    from recipesearch.models.registry import install_model

    for info in entries.get("model", {}).values():
        install_model(info)
    for name, loader in entries.get("dataset", {}).items():
        install_dataset(name, loader)
    for name, cls in entries.get("algorithm", {}).items():
        install_algorithm(name, cls)
    _INSTALLED.add(blob)


def _node_check(payload: dict[str, Any]) -> str | None:
    """Run on one node: None when the user code installs there, else the reason."""
    import socket

    try:
        install(payload)
    except UserError as exc:
        return f"{socket.gethostname()}: {exc}"
    except Exception as exc:  # noqa: BLE001
        return f"{socket.gethostname()}: {plugins.describe_call_error(exc)}"
    return None


def check_nodes(shipment: Shipment, timeout_s: float = 300.0) -> None:
    """Install the shipment on every alive node of the connected Ray (one zero-CPU task pinned to each); the
    first node where it fails is one ``UserError`` line before any trial starts."""
    payload = shipment.payload()
    if payload is None:
        return
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    task = ray.remote(num_cpus=0, max_retries=0)(_node_check)
    nodes = [n for n in ray.nodes() if n.get("Alive")]
    refs = {n["NodeManagerAddress"]: task.options(
        scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)).remote(payload) for n in nodes}
    try:
        answers = dict(zip(refs, ray.get(list(refs.values()), timeout=timeout_s)))
    except ray.exceptions.GetTimeoutError:
        raise UserError(f"plugins: the Ray nodes did not load the user code within {timeout_s:g} s") from None
    for node, problem in answers.items():
        if problem:
            raise UserError(f"user code does not load on Ray node {node} ({problem}); keep it beside the space "
                            "file or in the working directory so recipesearch ships it, or install it on every node")
