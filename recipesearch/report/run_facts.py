"""What the report says about the run itself: space name and hash, status, validation share, hardware.

Read from run.json, space.yaml and the trials' recipes, with a sensible answer when a file does not say
(older runs, a search still running, a hand-made run directory).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

_END_KEYS = ("end_time", "finished_at", "ended_at")  # run.json keys of a search that ended


def space_name_and_hash(space_text: str, meta: dict[str, Any], run_dir: str | None) -> tuple[str, str]:
    """The space's name (space.yaml's, else run.json's, else the run directory's) and its hash."""
    name = None
    try:
        data = yaml.safe_load(space_text) if space_text else None
        if isinstance(data, dict) and data.get("name") is not None:
            name = str(data["name"])
    except yaml.YAMLError:
        pass
    name = name or str(meta.get("space_name") or meta.get("space") or (Path(run_dir).name if run_dir else "search"))
    digest = meta.get("space_hash")
    if not digest:
        digest = hashlib.sha256(space_text.encode()).hexdigest()[:12] if space_text else "unknown"
    return name, str(digest)


def run_status(trials: pd.DataFrame, meta: dict[str, Any]) -> str:
    """run.json's ``status`` (the search writes running / finished / interrupted / failed); else from trials."""
    status = str(meta.get("status") or "").lower()
    if status:
        return status
    if trials["state"].isin(["RUNNING", "WAITING"]).any():
        return "running"
    if meta.get("start_time") and not any(meta.get(k) for k in _END_KEYS):
        return "running"
    return "finished"


def val_fraction(trials: pd.DataFrame) -> float | None:
    """The share of train held out for validation, read from the trained recipes (data.val_fraction).

    The trials' recipe_json is what was actually trained, whatever default filled it in; space.yaml may
    name its base by a path relative to where it was written. The most common positive value wins.
    """
    values = []
    for text in trials.get("recipe_json", pd.Series(dtype=object)):
        try:
            data = json.loads(text) if isinstance(text, str) and text else None
        except json.JSONDecodeError:
            continue
        fraction = data.get("data", {}).get("val_fraction") if isinstance(data, dict) else None
        if isinstance(fraction, (int, float)) and fraction > 0:
            values.append(float(fraction))
    return max(set(values), key=values.count) if values else None


def meta_dicts(meta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """run.json's hardware and library versions ({} where missing or not a mapping)."""
    hardware = meta.get("hardware")
    versions = meta.get("versions", meta.get("library_versions"))
    return (hardware if isinstance(hardware, dict) else {}), (versions if isinstance(versions, dict) else {})
