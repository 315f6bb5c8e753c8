"""`a2c view`: size of the HTML file, time to build it, and time to first render in headless Chromium.

Run: `.venv/bin/python benchmarks/bench_view.py [RUN_DIR ...]` from the repository root. Without a run
folder it makes a scripted QA run of the 12 quickstart questions in a temporary folder (no model). With
`--screenshots DIR` it also saves the overview and one question page as PNGs (docs/assets).

Time to first render is the page's own clock: `performance.now()` (milliseconds since navigation began)
when the viewer has drawn its first page, median over `--repeat` fresh loads; opening a question page is
the time from setting its route to its page being drawn (its chunk inflated). The load average is
printed with the timings: the machine may be shared. Needs /usr/bin/chromium (Debian's package).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the browser driver lives with the tests

from a2c.view import build_view
from tests.browser import CHROMIUM, Browser
from tests.view_runs import qa_run


def _small(png: Path) -> None:
    """Screenshots for the docs in a 256-colour palette: a third of the bytes, the same look."""
    from PIL import Image

    Image.open(png).convert("RGB").quantize(256).save(png, optimize=True)


def measure(html: Path, repeat: int, screenshots: Path | None) -> tuple[float, float]:
    """(median ms to first render, median ms to draw the first question page)."""
    first, item = [], []
    with Browser(timeout=120) as browser:
        for attempt in range(repeat):
            page = browser.open(html.resolve().as_uri(), width=1280, height=900)
            page.wait_for("window.a2cFirstRender !== undefined", timeout=120)
            first.append(page.evaluate("window.a2cFirstRender"))
            if screenshots is not None and attempt == 0:
                page.screenshot(screenshots / "view_overview.png", max_height=1500)
                _small(screenshots / "view_overview.png")
            qid = page.evaluate("DATA.runs[0].rows[1].id")
            started = page.evaluate("performance.now()")
            page.go(f"#r=0&id={qid}")
            item.append(page.evaluate("performance.now()") - started)
            if screenshots is not None and attempt == 0:
                page.screenshot(screenshots / "view_question.png", max_height=3200)
                _small(screenshots / "view_question.png")
            if errors := page.errors():
                raise SystemExit(f"console errors: {errors}")
    return statistics.median(first), statistics.median(item)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dirs", type=Path, nargs="*", help="run folders (default: a scripted QA run)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh page loads to take the median of")
    parser.add_argument("--screenshots", type=Path, help="save view_overview.png and view_question.png here")
    args = parser.parse_args()
    if not CHROMIUM.exists():
        raise SystemExit(f"needs {CHROMIUM} (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        runs = args.run_dirs or [qa_run(Path(tmp))]
        started = time.perf_counter()
        text = build_view(runs)
        built = time.perf_counter() - started
        html = Path(tmp) / "view.html"
        html.write_text(text, encoding="utf-8")
        if args.screenshots:
            args.screenshots.mkdir(parents=True, exist_ok=True)
        render, item = measure(html, args.repeat, args.screenshots)
    print(f"runs: {', '.join(str(r) for r in args.run_dirs) or 'scripted QA run, 12 questions'}")
    print(f"file: {len(text.encode('utf-8')) / 1e6:.2f} MB, built in {built:.1f} s")
    print(f"first render: {render:.0f} ms (median of {args.repeat}); a question page: {item:.0f} ms")
    print(f"load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
