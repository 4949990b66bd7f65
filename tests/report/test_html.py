"""index.html: self-contained, every user string escaped, all plots inline; plots written as SVG + PNG."""
from __future__ import annotations

import base64
import hashlib
import html as htmllib
import re

import numpy as np
import pandas as pd
import pytest

from recipesearch.report import build_info, load_run, write_report
from recipesearch.report.html import inline_svg
from recipesearch.report.plots import PLOTS

from .fake_run import EVIL, SEARCH_ROWS, trials_frame


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
    assert len(svgs) == len(PLOTS) == 5
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
    for section in ("summary", "confirmed", "plots", "frontier", "regimes", "recipes", "effects", "trials", "failed",
                    "config", "environment"):
        assert f'id="{section}"' in page
    assert '<div class="value good">2.00×</div>' in page  # the confirmed curve speedup
    assert '<div class="value good">2.00×</div>' in page  # best measured on the (confirmed) frontier: trial 4
    assert page.count('class="copy"') == 4  # one copy button per frontier recipe
    assert 'id="frontier-table"' in page and 'class="sortable"' in page
    assert "budgets: [0.25, 0.5, 1, 2]" in page  # space.yaml shown
    assert 'id="single-runs"' not in page  # the front is made of repeated points


def _between(page: str, start: str, end: str) -> str:
    return page[page.index(start):][:page[page.index(start):].index(end)]


def test_the_verdict_is_shown_with_its_interval(page, built_run):
    from recipesearch.report import build_info, load_run

    h = build_info(*load_run(built_run), run_dir=built_run).headline
    verdict = _between(page, 'id="verdict"', "</div>\n  </div>")
    assert 'class="verdict good"' in page and h.verdict in verdict  # ASCII: nothing to escape
    assert f"[95% CI {h.speedup_ci_low:.2f}-{h.speedup_ci_high:.2f}]" in verdict
    assert f"2.00× faster than the baseline [95% CI {h.speedup_ci_low:.2f}–{h.speedup_ci_high:.2f}]" in verdict
    assert (built_run / "plots" / "tradeoff.svg").is_file() and (built_run / "plots" / "tradeoff.png").is_file()
    assert 'id="fig-tradeoff"' in page


def test_confirmed_recipes_and_frontier_tables(page):
    table = _between(page, 'id="confirmed-table"', "</table>")
    rows = re.findall(r"<tr\b.*?</tr>", table.split("<tbody>")[1], re.S)
    assert len(rows) == 3  # the three recipes trained at two or more budgets, the confirmed one first
    assert 'class="confirmed"' in rows[0] and '<span class="yes">✓</span>' in rows[0] and ">3+<" in rows[0]
    assert re.search(r"2\.00× \[\d\.\d\d–\d\.\d\d\]", rows[0])
    assert all("one seed" in r and "✓" not in r for r in rows[1:])
    front = _between(page, 'id="frontier-table"', "</table>")
    assert ">Seeds<" in front and ">Speedup [95% CI]<" in front and ">Confirmed<" in front
    assert re.search(r"2\.00× \[\d\.\d\d–\d\.\d\d\]", front)  # trial 4's point, with its interval
    assert front.count("✓ curve") == 2 and "95.00% ± 0.50" in front  # trials 6 and 7: their curve is confirmed
    regimes = _between(page, 'id="regimes"', "</section>")
    assert regimes.count("✓ curve 2.00×") == 3


def test_the_evaluation_cost_is_shown_beside_the_training_time(page, built_run):
    """Evaluation (test-time augmentation's views included) is outside Time and every speedup; the report states
    it beside Time, in the frontier and the trials table, and pareto.csv carries it."""
    import pandas as pd

    from recipesearch.report.html import secs

    from .fake_run import EVAL_SHARE

    pareto = pd.read_csv(built_run / "pareto.csv")
    first = pareto.iloc[0]
    assert first["eval_seconds"] > 0
    trials = pd.read_csv(built_run / "trials.csv").set_index("number")
    assert first["eval_seconds"] == pytest.approx(EVAL_SHARE * trials.loc[first["number"], "train_seconds"])
    for table in ("frontier-table", "trials-table"):
        part = _between(page, f'id="{table}"', "</table>")
        assert ">Time</th><th data-type=\"num\" class=\"n\">Eval</th>" in part
    front = _between(page, 'id="frontier-table"', "</table>")
    assert f">{secs(first['eval_seconds'])}</td>" in front.split("<tbody>")[1].split("</tr>")[0]


@pytest.fixture(scope="module")
def single_run_page(tmp_path_factory) -> str:
    from .fake_run import SEARCH_ROWS, write_run_dir

    run = write_run_dir(tmp_path_factory.mktemp("single") / "run", trials_frame(SEARCH_ROWS))
    return write_report(build_info(*load_run(run), run_dir=run), run).read_text()


def test_single_runs_confirm_nothing(single_run_page):
    page = single_run_page
    verdict = _between(page, 'id="verdict"', "</div>\n  </div>")
    assert 'class="verdict open"' in page and ">Not confirmed yet</div>" in verdict
    assert "not confirmed: no recipe was trained at two or more budgets with repeated seeds" in verdict
    assert 'id="single-runs"' in page and "made of single runs" in page  # the frontier's note
    assert "<strong>Not confirmed:</strong> the frontier is made of single runs" in page  # regimes
    assert "✓" not in _between(page, 'id="confirmed-table"', "</table>")
    assert "the confirmation stage has not run" in page


def test_nothing_beat_the_baseline_is_said_plainly(tmp_path):
    df = trials_frame()  # the recipe with three seeds at three budgets, now 2.6x slower: not faster at all
    df.loc[~df["is_baseline"], "train_seconds"] *= 2.6
    page = write_report(build_info(df, {}, "", run_dir=tmp_path), tmp_path).read_text()
    verdict = _between(page, 'id="verdict"', "</div>\n  </div>")
    assert 'class="verdict bad"' in page and ">Nothing beat the baseline</div>" in verdict
    assert ("nothing beat the baseline to the target test acc 0.9500 (the baseline at budget 1): no recipe "
            "reaches it faster beyond seed noise") in verdict


def test_not_confirmed_when_no_recipe_has_a_curve(tmp_path):
    df = trials_frame(SEARCH_ROWS)
    df = df[df["is_baseline"] | df["number"].isin([5, 9])]  # recipes at one budget each
    page = write_report(build_info(df, {}, "", run_dir=tmp_path), tmp_path).read_text()
    assert ">Not confirmed yet</div>" in page and 'class="verdict open"' in page
    assert "not confirmed: no recipe was trained at two or more budgets" in page
    assert "there is no tradeoff curve to compare with the baseline" in page


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
    assert len(re.findall(r'class="plot-svg"', page)) == len(PLOTS)
    assert (tmp_path / "pareto.csv").is_file()
    assert len(pd.read_csv(tmp_path / "pareto.csv")) == len(info.front)
