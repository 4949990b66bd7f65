"""index.html in a real headless Chromium (Debian package ``chromium``): renders, runs its script without
errors, shows every plot, sorts tables and survives copy buttons without a clipboard.

Chromium runs with ``--dump-dom`` (the DOM after scripts ran) and ``--screenshot``; the page's own script
counts errors (window.onerror, unhandled rejections, CSP violations, console.error) into
``<body data-errors>`` and sets ``data-report-ready`` once it initialised, so both are read from the DOM.
"""
from __future__ import annotations

import base64
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from recipesearch.report.plots import PLOTS

CHROMIUM = "/usr/bin/chromium"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(),
                       reason="needs headless Chromium: apt-get install -y chromium (Debian package)"),
]
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]

# Exercises the page the way a user would: sort every sortable column both ways, click every copy button
# (headless has no clipboard permission, so the fallback path runs), then report what it saw.
SELFTEST = """
window.addEventListener("load", function () {
  var b = document.body, problems = [];
  document.querySelectorAll("table.sortable thead th:not([data-nosort])").forEach(function (th) {
    th.click(); th.click();
  });
  var table = document.getElementById("frontier-table"), acc = table.tHead.rows[0].cells[1];
  function accs() {
    return Array.prototype.map.call(table.tBodies[0].rows,
                                    function (r) { return parseFloat(r.cells[1].getAttribute("data-v")); });
  }
  acc.click();
  var up = accs(); for (var i = 1; i < up.length; i++) if (up[i] < up[i - 1]) problems.push("ascending");
  acc.click();
  var down = accs(); for (var j = 1; j < down.length; j++) if (down[j] > down[j - 1]) problems.push("descending");
  document.querySelectorAll("button[data-copy]").forEach(function (btn) { btn.click(); });
  var sizes = Array.prototype.map.call(document.querySelectorAll("svg.plot-svg"), function (s) {
    var r = s.getBoundingClientRect(); return Math.round(r.width) + "x" + Math.round(r.height);
  });
  b.setAttribute("data-svg-sizes", sizes.join(","));
  b.setAttribute("data-sort-problems", problems.join(","));
  setTimeout(function () { b.setAttribute("data-selftest", "done"); }, 300);
});
"""


def chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args], capture_output=True,
                          text=True, timeout=90)


def body_attrs(dom: str) -> dict[str, str]:
    tag = re.search(r"<body\b([^>]*)>", dom).group(1)
    return dict(re.findall(r'([\w-]+)="([^"]*)"', tag))


def console_problems(stderr: str) -> list[str]:
    """Console lines Chromium logs (--enable-logging=stderr) for script errors, CSP blocks and failed loads."""
    bad = ("Uncaught", "violates", "Refused", "Failed to load", "Not allowed to load")
    return [line for line in stderr.splitlines() if ":CONSOLE" in line and any(b in line for b in bad)]


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    from recipesearch.report import build_report

    from .fake_run import write_run_dir

    return build_report(write_run_dir(tmp_path_factory.mktemp("browser") / "run"))


def test_page_loads_without_errors_and_shows_every_plot(page, tmp_path):
    done = chromium(["--virtual-time-budget=3000", "--dump-dom", page.as_uri()], tmp_path / "profile")
    assert done.returncode == 0, done.stderr[-2000:]
    attrs = body_attrs(done.stdout)
    assert attrs.get("data-report-ready") == "1", "the page script did not run (blocked by CSP?)"
    assert attrs.get("data-errors") == "0", attrs.get("data-error-messages")
    assert len(re.findall(r'<svg[^>]*class="plot-svg"', done.stdout)) == len(PLOTS) == 5
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in done.stdout
    assert not console_problems(done.stderr)


def test_sorting_and_copy_buttons_work_without_errors(page, tmp_path):
    # Same page plus the self-test script, allowed by adding its hash to the page's CSP.
    digest = base64.b64encode(hashlib.sha256(SELFTEST.encode()).digest()).decode()
    html = page.read_text().replace("script-src ", f"script-src 'sha256-{digest}' ", 1)
    html = html.replace("</body>", f"<script>{SELFTEST}</script></body>")
    test_page = tmp_path / "selftest.html"
    test_page.write_text(html)
    done = chromium(["--virtual-time-budget=5000", "--window-size=1280,2000", "--dump-dom", test_page.as_uri()],
                    tmp_path / "profile")
    attrs = body_attrs(done.stdout)
    assert attrs.get("data-selftest") == "done", done.stderr[-2000:]
    assert attrs.get("data-errors") == "0", attrs.get("data-error-messages")
    assert attrs.get("data-sort-problems") == ""
    sizes = [tuple(map(int, s.split("x"))) for s in attrs["data-svg-sizes"].split(",")]
    assert len(sizes) == len(PLOTS) and all(w > 400 and h > 150 for w, h in sizes), sizes
    assert not console_problems(done.stderr)


def test_screenshot(page, tmp_path):
    shot = tmp_path / "report.png"
    done = chromium([f"--screenshot={shot}", "--window-size=1280,4000", page.as_uri()], tmp_path / "profile")
    assert shot.is_file(), done.stderr[-2000:]
    assert shot.read_bytes().startswith(b"\x89PNG") and shot.stat().st_size > 20_000
    keep = Path(page.parent / "screenshot.png")  # left next to the report for a human to look at
    shutil.copy(shot, keep)
