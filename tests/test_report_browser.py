"""The report in headless Chromium (Debian's `chromium`, driven by Playwright's Python API
with the system browser): no console error, no request leaves `file://`, every section is
there, the charts have marks, the explorer's slider moves the counts and the viewer opens a
low-score example. Skips with the reason when Playwright or Chromium is missing
(`make test` installs Chromium where apt-get can)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from report_corpus import make_run

from pipelines.cli import main as trajcurate
from transforms.report.page import SECTIONS

pytestmark = pytest.mark.browser
pytest.importorskip("matplotlib", reason="the report needs the 'report' extra (matplotlib)")
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="Playwright for Python is not installed (the dev extra)"
)
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
if CHROMIUM is None:
    pytest.skip("no chromium on PATH (apt-get install chromium)", allow_module_level=True)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report-browser")
    output = make_run(root, trials=40, seed=11)
    assert (
        trajcurate(["report", str(output), "-o", str(root / "report"), "--resamples", "200"]) == 0
    )
    return root / "report"


@pytest.fixture(scope="module")
def page(report: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    problems: list[str] = []
    requests: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1300, "height": 900})
        tab.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        tab.on("pageerror", lambda e: problems.append(str(e)))
        tab.on("request", lambda r: requests.append(r.url))
        tab.goto((report / "index.html").as_uri())
        tab.wait_for_load_state("load")
        yield tab, problems, requests
        browser.close()


def test_no_console_error_and_no_network(page: tuple[Any, list[str], list[str]]) -> None:
    _, problems, requests = page
    assert problems == []
    assert requests and all(url.startswith("file://") for url in requests), requests


def test_every_section_is_there_with_drawn_charts(page: tuple[Any, list[str], list[str]]) -> None:
    tab, _, _ = page
    for section, name in SECTIONS:
        heading = tab.locator(f"section#{section} h2")
        assert heading.inner_text() == name
    for section in ("overview", "distributions", "separation", "thresholds"):
        # The marks (non-empty paths) of each chart the reader sees, and its drawn area.
        shown = tab.evaluate(
            """(id) => Array.from(document.querySelectorAll(`#${id} svg.chart`))
                 .map(svg => [svg.getBoundingClientRect(), svg])
                 .filter(([box]) => box.width > 0 && box.height > 0)
                 .map(([box, svg]) => [box.width * box.height,
                   Array.from(svg.querySelectorAll('path')).filter(
                     p => (p.getAttribute('d') || '').length > 4).length])""",
            section,
        )
        assert shown, f"no chart drawn in {section}"
        assert all(area > 10_000 and marks >= 5 for area, marks in shown), (section, shown)


def test_selectors_switch_the_charts(page: tuple[Any, list[str], list[str]]) -> None:
    tab, _, _ = page
    tab.select_option("#distributions select[data-select='key']", "tvr_score")
    tab.select_option("#distributions select[data-select='dim']", "scaffold")
    shown = tab.locator("#distributions .chart-box:not([hidden])")
    assert shown.count() == 1
    assert shown.get_attribute("data-key") == "tvr_score"
    assert shown.get_attribute("data-dim") == "scaffold"


def test_threshold_slider_moves_the_counts(page: tuple[Any, list[str], list[str]]) -> None:
    tab, _, _ = page
    kept = tab.locator("#thresholds tr[data-segment='all'] [data-cell='kept']")
    total = int(tab.locator("#thresholds tr[data-segment='all'] td").nth(1).inner_text())
    tab.locator("#threshold").fill("0")
    assert int(kept.inner_text()) == total
    tab.locator("#threshold").fill("100")
    assert int(kept.inner_text()) < total
    assert tab.locator("#threshold-value").inner_text() == "1.00"


def test_viewer_opens_a_low_score_example(page: tuple[Any, list[str], list[str]]) -> None:
    tab, problems, _ = page
    buttons = tab.locator("#low-scores button.example")
    assert buttons.count() > 0
    opened_one_with_messages = False
    for index in range(buttons.count()):
        buttons.nth(index).click()
        assert tab.locator("dialog#viewer").is_visible()
        assert tab.locator("#viewer-title").inner_text() == buttons.nth(index).inner_text()
        if tab.locator("#viewer-body .msg").count():
            assert tab.locator("#viewer-body .reasons").inner_text().startswith("Why this score")
            assert "TVR" in tab.locator("#viewer-body .reasons").inner_text()
            opened_one_with_messages = True
        else:
            assert "not in the curated output" in tab.locator("#viewer-body").inner_text()
        tab.locator("#viewer-close").click()
        if opened_one_with_messages:
            break
    assert opened_one_with_messages
    assert problems == []


def test_diagnosis_shows_detector_rates_and_evidence_links(
    page: tuple[Any, list[str], list[str]],
) -> None:
    tab, problems, _ = page
    rows = tab.locator("#diagnosis table.detectors tbody tr")
    assert rows.count() >= 3
    assert tab.locator("#diagnosis svg.chart").count() >= 3  # two score histograms, the rates
    # The per-segment table follows the select.
    tab.select_option("#diagnosis select[data-select='dim']", "model")
    shown = tab.locator("#diagnosis .chart-box:not([hidden])")
    assert shown.count() == 1 and shown.get_attribute("data-dim") == "model"
    # An example whose detections cite messages: the link scrolls to the cited message.
    buttons = tab.locator("#diagnosis button.example")
    followed = False
    for index in range(buttons.count()):
        buttons.nth(index).click()
        links = tab.locator("#viewer-body .diagnosis a.jump")
        if links.count():
            assert tab.locator("#viewer-body .diagnosis").inner_text().startswith("Diagnosis")
            label = links.last.inner_text()  # "#12"
            links.last.click()
            target = tab.locator(f"#viewer-body #m-{label.lstrip('#')}")
            assert target.is_visible() and "flash" in (target.get_attribute("class") or "")
            assert target.locator(".msg-head").inner_text().startswith(label)
            followed = True
        tab.locator("#viewer-close").click()
        if followed:
            break
    assert followed
    assert problems == []
