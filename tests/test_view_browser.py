"""`a2c view` pages in a real headless Chromium (Debian's `chromium`, installed by `make setup`; skipped
where it is absent, never downloaded): they load with no console error, list one row per question,
filter and sort, and draw a question's heatmaps and rank replies from its lazily inflated chunk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from a2c.classification.rows import INPUTS, LABELS
from a2c.qa.rows import CHOICES, METRICS
from a2c.run.store import RunFolder
from a2c.view import write_view
from tests.browser import CHROMIUM, Browser, Page
from tests.view_runs import classification_run, expected_changed, qa_run

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason=f"no {CHROMIUM}: the browser tests need Debian's chromium package "
    "(`make setup` installs it with apt-get; a browser is never downloaded at run time)")


@pytest.fixture(scope="module")
def browser():
    with Browser() as running:
        yield running


@pytest.fixture(scope="module")
def qa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return qa_run(tmp_path_factory.mktemp("browser-qa"))


def _open(browser: Browser, html: Path) -> Page:
    page = browser.open(html.resolve().as_uri())
    page.wait_for("document.body.dataset.rendered")
    return page


def _count(page: Page, selector: str) -> int:
    return page.evaluate(f"document.querySelectorAll({json.dumps(selector)}).length")


def _pick(page: Page, selector: str, value: str) -> None:
    """Choose an option of a filter the way a user does (the change event redraws the list)."""
    page.evaluate(f"(() => {{ const s = document.querySelector({json.dumps(selector)}); s.value = "
                  f"{json.dumps(value)}; s.dispatchEvent(new Event('change')); }})()")


def _column(page: Page, header: str) -> list[str]:
    """The cells of the first table on the page with this column header."""
    return page.evaluate(f"""(() => {{
        for (const table of document.querySelectorAll('table.data')) {{
            const heads = [...table.querySelectorAll('thead th')].map((th) => th.textContent);
            const at = heads.indexOf({json.dumps(header)});
            const rows = [...table.querySelectorAll('tbody tr')];
            if (at >= 0) return rows.map((tr) => tr.children[at].textContent);
        }}
        return null;
    }})()""")


def test_a_qa_run_opens_filters_and_draws_a_question_page(browser, qa, tmp_path):
    folder = RunFolder(qa)
    html = write_view([qa], tmp_path / "view.html")
    page = _open(browser, html)
    assert page.evaluate("document.querySelector('main h2').textContent") == "a2c report: view-qa"
    assert _count(page, "img.plot") == 4  # accuracy vs consistency, correlations, rejection, risk–coverage

    page.go("#r=0&p=list")
    ids = list(dict.fromkeys(r.id for r in folder.read_rows(METRICS)))
    assert _count(page, "tr[data-id]") == len(ids) == 12
    changed = expected_changed(folder)
    _pick(page, 'select[data-filter="changed"]', "yes")
    assert page.evaluate("[...document.querySelectorAll('tr[data-id]')].map((tr) => tr.dataset.id)") == \
        [q for q in ids if q in changed]
    assert page.evaluate("document.getElementById('a2c-count').textContent") == str(len(changed))
    _pick(page, 'select[data-filter="changed"]', "no")
    assert _count(page, "tr[data-id]") == len(ids) - len(changed)
    _pick(page, 'select[data-filter="changed"]', "any")
    page.evaluate("document.querySelector('th[data-key=\"paraphrase.before.cons_sem.exact\"]').click()")
    shown = _column(page, "Exact Cons_sem before")
    values = [float(v) for v in shown if v != "n/a"]  # n/a: a question with fewer than two paraphrases left
    assert values == sorted(values, reverse=True) and len(shown) == 12  # numbers sort largest first
    assert shown[len(values):] == ["n/a"] * (12 - len(values))  # undefined ones last
    page.evaluate("""(() => { const box = document.getElementById('a2c-search'); box.value = 'planet';
                              box.dispatchEvent(new Event('input')); })()""")
    assert _count(page, "tr[data-id]") == 1

    assert page.evaluate("chunks.size") == 0  # no question page inflated before one is opened
    qid = ids[1]
    page.go(f"#r=0&id={qid}")
    assert page.evaluate("chunks.size") == 1
    assert _count(page, "svg.heatmap") == 2 * 2 * 2  # judges × sources × phases
    assert _column(page, "raw reply") == [c.reply for c in folder.read_rows(CHOICES) if c.id == qid]
    assert page.errors() == []


def test_a_classification_run_lists_its_items_and_their_inputs(browser, tmp_path):
    run = classification_run(tmp_path)
    folder = RunFolder(run)
    inputs, labels = folder.read_rows(INPUTS), {r.key: r for r in folder.read_rows(LABELS)}
    page = _open(browser, write_view([run], tmp_path / "view.html"))
    page.go("#r=0&p=list")
    items = list(dict.fromkeys(i.item for i in inputs))
    assert _count(page, "tr[data-id]") == len(items) == 30
    unparsed = {i.item for i in inputs if labels[i.key].label is None}
    _pick(page, 'select[data-filter="unparsed"]', "yes")
    assert _count(page, "tr[data-id]") == len(unparsed) > 0
    page.go(f"#r=0&id={items[0]}")
    assert _column(page, "raw reply") == [labels[i.key].reply for i in inputs if i.item == items[0]]
    assert page.errors() == []


def test_several_runs_open_on_their_comparison(browser, qa, tmp_path):
    other = qa_run(tmp_path, seed=1)
    page = _open(browser, write_view([qa, other], tmp_path / "two.html"))
    assert page.evaluate("document.querySelector('main h2').textContent") == \
        "Before → after Ask-to-Choose across runs"
    assert len(_column(page, "run")) == 2 * 2  # methods × runs
    page.go("#r=1&p=list")
    assert _count(page, "tr[data-id]") == 12
    assert page.errors() == []
