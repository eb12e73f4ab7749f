"""Screenshots of the report's sections for the README: `docs/report-<section>.png`.

Builds the report of a small synthetic run (`trajcurate synth` + two `trajcurate run`s and
the sidecars, as the tests make it), opens it in headless Chromium through Playwright and
captures each section (cut to `--max-height` pixels), the viewer on a low-score example and
on an example whose diagnosis cites messages.

    .venv/bin/python benchmarks/report_screenshots.py [--out docs]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from pipelines.cli import main as trajcurate
from transforms.report.page import SECTIONS

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the tests' corpus maker
from report_corpus import make_run  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs")
    parser.add_argument("--max-height", type=int, default=1100)
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("no chromium on PATH (apt-get install chromium)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="report-shots-") as tmp:
        root = Path(tmp)
        output = make_run(root, jobs=2, trials=80, seed=7)
        assert trajcurate(["report", str(output), "-o", str(root / "report")]) == 0
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((root / "report" / "index.html").as_uri())
            page.add_style_tag(content="header { position: static; }")
            for section, _ in SECTIONS:
                box = page.locator(f"section#{section}").bounding_box()
                assert box is not None
                clip = {**box, "height": min(box["height"], args.max_height)}
                path = args.out / f"report-{section}.png"
                page.screenshot(path=str(path), clip=clip, full_page=True)
                print(path)
            buttons = page.locator("#low-scores button.example")
            for index in range(buttons.count()):
                buttons.nth(index).click()
                if page.locator("#viewer-body .msg").count():
                    break
                page.locator("#viewer-close").click()
            path = args.out / "report-viewer.png"
            page.screenshot(path=str(path))
            print(path)
            page.locator("#viewer-close").click()
            _diagnosed_example(page, args.out / "report-viewer-diagnosis.png")
            browser.close()
    return 0


def _diagnosed_example(page: Any, path: Path) -> None:
    """The viewer on an example whose detections cite messages, at its diagnosis."""
    buttons = page.locator("#diagnosis button.example")
    for index in range(buttons.count()):
        buttons.nth(index).click()
        if page.locator("#viewer-body .diagnosis a.jump").count():
            page.locator("#viewer-body .diagnosis").scroll_into_view_if_needed()
            page.screenshot(path=str(path))
            print(path)
            return
        page.locator("#viewer-close").click()


if __name__ == "__main__":
    sys.exit(main())
