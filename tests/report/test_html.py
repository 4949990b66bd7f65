"""index.html: self-contained, every user string escaped, all plots inline; plots written as SVG + PNG."""
from __future__ import annotations

import base64
import hashlib
import html as htmllib
import re

import numpy as np
import pandas as pd
import pytest

from recipesearch.report import build_info, write_report
from recipesearch.report.html import inline_svg
from recipesearch.report.plots import PLOTS

from .fake_run import EVIL, trials_frame


@pytest.fixture
def page(built_run) -> str:
    return (built_run / "index.html").read_text()


def test_user_strings_are_escaped(page):
    assert "<script>alert" not in page.lower()
    assert len(re.findall(r"<script\b", page, re.I)) == 1  # only the page's own script
    escaped = htmllib.escape(EVIL, quote=False)
    assert escaped in page  # shown as text: title, header, plot <text>, YAML, error
    assert "&lt;b&gt;label_smoothing&lt;/b&gt;" in page  # the error text of the failed trial
    assert "Test CPU &lt;i&gt;fast&lt;/i&gt;" in page  # hardware from run.json
    for svg in re.findall(r"<svg\b.*?</svg>", page, re.S):
        assert not re.search(r"<\s*script|\son\w+\s*=", svg, re.I)


def test_self_contained(page):
    assert not re.search(r"https?://", page)  # no external resources (nor namespace URLs)
    links = re.findall(r"""\b(?:src|href)\s*=\s*["']([^"']*)""", page, re.I)
    assert links and all(v.startswith(("#", "data:")) for v in links), [v for v in links if v[:1] != "#"]
    assert "<?xml" not in page and "<!DOCTYPE svg" not in page
    assert "@import" not in page and "url(http" not in page


def test_all_plots_inline_with_unique_ids(page, built_run):
    svgs = re.findall(r'<svg\b[^>]*class="plot-svg"', page)
    assert len(svgs) == len(PLOTS) == 4
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))
    for ref in set(re.findall(r'url\(#([^)]+)\)|href="#([^"]+)"', page)):
        target = ref[0] or ref[1]
        assert target in ids, f"dangling reference #{target}"
    for name in PLOTS:
        assert (built_run / "plots" / f"{name}.svg").read_text().lstrip().startswith("<?xml")
        png = (built_run / "plots" / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG") and len(png) > 5000


def test_content_security_policy_allows_exactly_the_page_script(page):
    script = re.search(r"<script>(.*?)</script>", page, re.S).group(1)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert f"script-src 'sha256-{digest}'" in csp and "default-src 'none'" in csp


def test_sections(page):
    for section in ("summary", "plots", "frontier", "regimes", "recipes", "effects", "trials", "failed", "config",
                    "environment"):
        assert f'id="{section}"' in page
    assert '<div class="value good">2.29×</div>' in page  # headline speedup 16 s / 7 s
    assert '<div class="value good">2.24×</div>' in page  # best measured on the frontier: trial 5
    assert page.count('class="copy"') == 9  # one copy button per frontier recipe
    assert 'id="frontier-table"' in page and 'class="sortable"' in page
    assert "budgets: [0.25, 0.5, 1, 2]" in page  # space.yaml shown


def test_inline_svg_namespaces_ids_and_rejects_scripts():
    svg = ('<?xml version="1.0"?>\n<!DOCTYPE svg>\n<svg xmlns="http://www.w3.org/2000/svg" width="10pt" '
           'height="5pt" viewBox="0 0 10 5"><metadata>http://x</metadata><defs><path id="m1"/></defs>'
           '<use xlink:href="#m1"/><g clip-path="url(#p2)"><text>id="keep" &lt;b&gt;</text></g></svg>')
    out = inline_svg(svg, "plot-a")
    assert out.startswith("<svg viewBox=") and "http" not in out and "width" not in out.split(">")[0]
    assert 'id="plot-a-m1"' in out and 'href="#plot-a-m1"' in out and "url(#plot-a-p2)" in out
    assert '<text>id="keep" &lt;b&gt;</text>' in out  # text content untouched
    assert inline_svg(svg.replace("<defs>", "<script>alert(1)</script><defs>"), "x") is None
    assert inline_svg(svg.replace("<g ", '<g onload="alert(1)" '), "x") is None


@pytest.mark.parametrize("case", ["empty", "no_baseline", "one_trial", "minimal_columns"])
def test_report_renders_for_partial_runs(case, tmp_path, monkeypatch):
    monkeypatch.setattr("recipesearch.report.plots.PNG_DPI", 30)  # robustness, not looks: keep it fast
    df = trials_frame()
    df = {"empty": pd.DataFrame(), "no_baseline": df[~df["is_baseline"]], "one_trial": df.iloc[[4]],
          "minimal_columns": df[["number", "accuracy", "train_seconds"]]}[case]
    if case == "no_baseline":
        df = df.copy()
        df.loc[df.index[::4], "accuracy"] = np.nan
    info = build_info(df, {}, "", run_dir=tmp_path)
    index = write_report(info, tmp_path)
    page = index.read_text()
    assert len(re.findall(r'class="plot-svg"', page)) == 4
    assert (tmp_path / "pareto.csv").is_file()
    assert len(pd.read_csv(tmp_path / "pareto.csv")) == len(info.front)
