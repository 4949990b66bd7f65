"""``index.html``: one self-contained page (inline CSS, JS and SVG; no network) rendered from a ReportInfo.

Safety: jinja2 autoescape is on, so every user string (space name, algorithm names, errors, YAML) is
escaped; plot SVGs are inserted as markup only after ``inline_svg`` has stripped the XML prolog, comments
and metadata, namespaced their ids (several SVGs share one document) and checked they hold no script.
A Content-Security-Policy allows only the page's own script (by hash) and no network at all.
"""
from __future__ import annotations

import base64
import hashlib
import json
import re
from importlib import resources
from typing import Any

from recipesearch.analysis import finite, interval_text
from recipesearch.report.info import ReportInfo
from recipesearch.report.plots import PLOTS, Plot
from recipesearch.report.point_text import algorithms_label, evidence

_TAG = re.compile(r"<[^>]*>")
_UNSAFE_SVG = re.compile(r"<\s*(script|foreignObject|iframe|object|embed)\b|\son\w+\s*=|javascript:", re.I)
_LARGE_DATA_WAIT = 0.2  # above this the trial waited on data (CPU-bound augmentation): flagged in the table


def _template_text(name: str) -> str:
    return resources.files("recipesearch.report").joinpath("templates", name).read_text(encoding="utf-8")


def _prefix_ids(tag: str, prefix: str) -> str:
    tag = re.sub(r'(\sid=")([^"]+)"', lambda m: f'{m.group(1)}{prefix}-{m.group(2)}"', tag)
    tag = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}-{m.group(1)})", tag)
    return re.sub(r'(href=")#([^"]+)"', lambda m: f'{m.group(1)}#{prefix}-{m.group(2)}"', tag)


def inline_svg(svg: str, prefix: str) -> str | None:
    """Matplotlib's SVG file made fit for inlining in HTML, or None when it looks unsafe.

    Text content is already XML-escaped by matplotlib, so ``<`` only starts tags: ids and references
    are rewritten inside tags only, never in the (user-provided) text.
    """
    start = svg.find("<svg")
    if start < 0:
        return None
    body = svg[start:]
    body = re.sub(r"<!--.*?-->", "", body, flags=re.S)
    body = re.sub(r"<metadata>.*?</metadata>\s*", "", body, flags=re.S)
    head_end = body.find(">")
    # Namespace declarations are implied by the HTML parser; width/height go so CSS can scale the plot.
    head = re.sub(r'\s(xmlns(:\w+)?|width|height|version)="[^"]*"', "", body[:head_end])
    body = head + f' class="plot-svg" role="img" aria-labelledby="{prefix}-caption"' + body[head_end:]
    body = _TAG.sub(lambda m: _prefix_ids(m.group(0), prefix), body)
    if _UNSAFE_SVG.search(body):
        return None
    return body.strip()


# Formatting filters (NaN-safe) ------------------------------------------------------------------


def pct(x: Any, digits: int = 2) -> str:
    return f"{100 * float(x):.{digits}f}%" if finite(x) else "—"


def pp(x: Any, digits: int = 2) -> str:
    """Accuracy difference in percentage points, signed."""
    return f"{100 * float(x):+.{digits}f} pp" if finite(x) else "—"


def secs(x: Any) -> str:
    if not finite(x):
        return "—"
    x = float(x)
    if x >= 3600:
        return f"{x / 3600:.2f} h"
    if x >= 120:
        return f"{x / 60:.1f} min"
    return f"{x:.3g} s" if x < 10 else f"{x:.1f} s"


def num(x: Any, spec: str = ".3g") -> str:
    return format(float(x), spec) if finite(x) else "—"


def speedup_text(x: Any, status: str) -> str:
    """'2.31×'; '≤1.40×' below the baseline range (an upper bound); 'beyond baseline' when unmatched."""
    if status == "beyond_baseline":
        return "beyond baseline"
    if status in ("no_baseline", "invalid", ""):
        return "—"
    if not finite(x):
        return "—"
    return f"≤{float(x):.2f}×" if status == "below_baseline" else f"{float(x):.2f}×"


def ci_text(low: Any, high: Any, seeds: Any = 2, label: bool = True) -> str:
    """' [95% CI 1.90–2.09]' (' [1.90–2.09]' under a heading that says it) after a speedup; '' without a
    finite interval or with fewer than two seeds (one run bootstrapped measures no noise: a point)."""
    if finite(seeds) and float(seeds) < 2:
        return ""
    return interval_text(low, high, dash="–", label=label)


def confirmed_text(row: dict[str, Any]) -> str:
    """The regime table's short verdict on a frontier point: what is confirmed, with its interval."""
    if row.get("is_baseline"):
        return "baseline"
    if row.get("curve_confirmed"):
        return f"✓ curve {float(row['curve_speedup']):.2f}×" + ci_text(row["curve_ci_low"], row["curve_ci_high"],
                                                                        label=False)
    if row.get("confirmed"):
        return f"✓ {float(row['speedup']):.2f}×" + ci_text(row["speedup_ci_low"], row["speedup_ci_high"], label=False)
    n = row.get("n_seeds")
    return f"no ({int(n)} seeds)" if finite(n) and float(n) >= 2 else "no (single run)"


def plus_minus(row: dict[str, Any], col: str, low: str, high: str, fmt) -> str:
    """'95.00% ± 0.50' style: the mean formatted by ``fmt`` and the 95 % CI half-width, for repeated points."""
    text = fmt(row.get(col))
    lo, hi, n = row.get(low), row.get(high), row.get("n_seeds")
    if finite(lo) and finite(hi) and finite(n) and float(n) >= 2:
        half = (float(hi) - float(lo)) / 2
        text += " ± " + (f"{100 * half:.2f}" if fmt is pct else fmt(half))
    return text


def headline_title(h) -> str:
    """The headline in a few words: the confirmed speedup, or plainly that nothing beat the baseline."""
    if h.confirmed:
        return f"{h.speedup:.2f}× faster than the baseline{ci_text(h.speedup_ci_low, h.speedup_ci_high)}"
    if h.verdict.startswith("nothing beat the baseline"):
        return "Nothing beat the baseline"
    return "Not confirmed yet"


def gain_text(x: Any, status: str) -> str:
    """Accuracy gain at matched time: '≥' marks a lower bound (faster than any baseline run), '≤' an upper."""
    if not finite(x) or status in ("no_baseline", "invalid", ""):
        return "—"
    mark = {"below_baseline": "≥", "beyond_baseline": "≤"}.get(status, "")
    return mark + pp(x)


def sort_value(x: Any) -> str:
    """data-v attribute of a sortable cell: numbers as text, NaN as '' (sorted last)."""
    if isinstance(x, bool):
        return str(int(x))
    if isinstance(x, (int, float)):
        return repr(float(x)) if finite(x) else ""
    return str(x)


def accuracy_columns(info: ReportInfo) -> list[tuple[str, str]]:
    """(column, heading) of the accuracies each table shows: the one selected on, then test as held out."""
    if info.selection.on_val:
        return [(info.metric, "Val acc"), ("accuracy", "Test acc (held out)")]
    return [("accuracy", "Test acc")]


def _held_out(info: ReportInfo):
    """``held_out(number)``: ' (test acc 94.20%, held out)' after a selected-on accuracy; '' on a test run.

    A frontier row's test accuracy (a seed mean there) wins over the single run's of the same number.
    """
    test = {}
    for rows in (info.trials, info.front):
        if len(rows) and "accuracy" in rows:
            test.update(zip(rows["number"], rows["accuracy"], strict=True))

    def held_out(number: Any) -> str:
        if not info.selection.on_val or number is None:
            return ""
        return f" (test acc {pct(test.get(number))}, held out)"

    return held_out


def _baseline_best(info: ReportInfo) -> dict[str, Any] | None:
    """The baseline's most accurate point (seed mean, on the metric selected on), or None without one."""
    base = info.baseline_points
    if base.empty or not base[info.metric].notna().any():
        return None
    return base.loc[base[info.metric].idxmax()].to_dict()


def _rows(df) -> list[dict[str, Any]]:
    return df.to_dict("records") if df is not None and len(df) else []


def _flat_meta(meta: dict[str, Any]) -> list[tuple[str, str]]:
    """Top-level run.json entries other than hardware/versions, nested values as compact JSON."""
    out = []
    for key, value in meta.items():
        if key in ("hardware", "versions", "library_versions"):
            continue
        if isinstance(value, (dict, list)):
            value = json.dumps(value, default=str)
        out.append((str(key), str(value)))
    return out


def render_html(info: ReportInfo, plots: dict[str, Plot]) -> str:
    """The whole page as a string (pure: no file access besides the packaged templates)."""
    import jinja2
    from markupsafe import Markup

    from recipesearch.version import __version__

    script = _template_text("report.js")
    script_hash = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    figures = []
    for name, caption in PLOTS.items():
        plot = plots.get(name)
        if plot is None:
            continue
        svg = inline_svg(plot.svg, f"plot-{name}")
        png = None if svg else base64.b64encode(plot.png).decode()  # fallback: the PNG as a data URI
        figures.append({"name": name, "caption": caption, "svg": Markup(svg) if svg else None, "png": png})

    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(pct=pct, pp=pp, secs=secs, num=num, sv=sort_value, algos=algorithms_label)
    env.globals.update(speedup_text=speedup_text, gain_text=gain_text, held_out=_held_out(info), ci_text=ci_text,
                       plus_minus=plus_minus, pct=pct, secs=secs, evidence=evidence,
                       confirmed_text=confirmed_text, num=num)
    template = env.from_string(_template_text("report.html.j2"))
    front = _rows(info.front)
    recipes = {r.number: r for r in info.recipes}
    return template.render(
        info=info,
        h=info.headline,
        headline_title=headline_title(info.headline),
        payback=info.frontier.payback.text() if info.frontier.payback is not None else "",
        payback_stages=info.frontier.payback.stages_text() if info.frontier.payback is not None else "",
        # held-out test accuracy of the confirmed recipe (its best budget on the metric), on a validation run
        headline_test=info.recipe_test_accuracy(info.headline.number)
        if info.headline.confirmed and info.selection.on_val else float("nan"),
        baseline_best=_baseline_best(info),
        curves=_rows(info.recipe_curves),
        sel=info.selection,
        acc_cols=accuracy_columns(info),
        notes=[w for w in info.warnings if w != info.selection.text],  # the header already says it
        version=__version__,
        css=Markup(_template_text("report.css")),
        script=Markup(script),
        script_hash=script_hash,
        figures=figures,
        front=front,
        front_by_number={r["number"]: r for r in front},
        recipes=recipes,
        unique_recipes=[r for i, r in enumerate(info.recipes)
                        if r.yaml_text and r.recipe_id not in {q.recipe_id for q in info.recipes[:i]}],
        regimes=_rows(info.regimes),
        effects=_rows(info.effects),
        interactions=_rows(info.interactions),
        trials=_rows(info.trials),
        failed=_rows(info.failed),
        counts=info.state_counts,
        has_cost="cost" in info.objectives,
        meta_rows=_flat_meta(info.run_meta),
        data_wait_flag=_LARGE_DATA_WAIT,
        replication=_rows(info.replication) if info.replication is not None else [],
        replication_inside=_replication_inside(info),
    )


def _replication_inside(info: ReportInfo) -> str:
    if info.replication is None or info.replication.empty:
        return ""
    from recipesearch.analysis.replication import inside_share

    share, n = inside_share(info.replication), len(info.replication)
    inside = int(info.replication["inside"].astype(bool).sum())
    return f"{inside} of {n} claim(s) inside" + (f" ({share:.0%})." if share == share else ".")
