"""Screenshots of the built docs site for the docs themselves: the home page, a how-to and a generated
Reference page, taken with the viewer tests' headless Chromium (`tests/browser.py`).

Run from the repository root after `.venv/bin/mkdocs build`: `.venv/bin/python docs/screenshots.py`. It
writes docs/assets/site_*.png (a 256-colour palette, as the viewer's screenshots) and fails on a page with
console errors.
"""

from __future__ import annotations

import functools
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from PIL import Image

from tests.browser import Browser

SITE = Path("site")
PAGES = {"site_home.png": "", "site_howto_serve.png": "how-to/serve/",
         "site_reference_config.png": "reference/config/"}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    out = Path("docs") / "assets"
    # over HTTP on 127.0.0.1, as `mkdocs serve` shows it: the search index does not load from file://
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = f"http://127.0.0.1:{server.server_address[1]}/"
    with Browser(timeout=120) as browser:
        for name, page_path in PAGES.items():
            page = browser.open(root + page_path, width=1280, height=900)
            page.wait_for("document.readyState === 'complete'", timeout=60)
            page.screenshot(out / name, max_height=1400)
            Image.open(out / name).convert("RGB").quantize(256).save(out / name, optimize=True)
            if errors := page.errors():
                print(f"{page_path}: console errors: {errors}", file=sys.stderr)
                return 1
            print(f"{out / name}: /{page_path}")
    server.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
