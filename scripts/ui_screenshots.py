"""Make the screenshots of docs/ui.md: the demo history in a fresh index, `refind ui` on loopback, a real
headless Chromium (the system's, driven by Playwright) on four pages.

    python scripts/ui_screenshots.py      # writes docs/img/ui-home.png, ui-search.png, ui-period.png, ui-session.png
    python scripts/ui_screenshots.py --out /tmp/shots

Needs the dev extra (Playwright) and Debian's chromium (or $REFIND_CHROMIUM naming a Chromium binary).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
QUESTION = "what did the vet give Pixel?"
PERIOD = ("what were our holiday plans last month?", "2024-05-01", "2024-06-30", "2024-06-20")
SHOTS = ("ui-home.png", "ui-search.png", "ui-period.png", "ui-session.png")


def _chromium() -> str:
    found = os.environ.get("REFIND_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        sys.exit("no chromium on PATH: apt-get install chromium, or set REFIND_CHROMIUM")
    return found


def _start_ui(index: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("REFIND_")}
    with log.open("wb") as fh:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "refind.cli",
                "--data",
                str(index),
                "--tz",
                "UTC",
                "ui",
                "--user",
                "maya",
                "--port",
                "0",
            ],  # fmt: skip
            stdout=fh,
            stderr=subprocess.STDOUT,
            env=env,
        )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        found = re.search(r"at (http://\S+) \(Ctrl-C", log.read_text(errors="replace"))  # with its ?token=
        if found:
            return proc, found.group(1)
        if proc.poll() is not None:
            sys.exit(f"refind ui exited {proc.returncode}: {log.read_text(errors='replace')}")
        time.sleep(0.1)
    proc.kill()
    sys.exit(f"refind ui did not start: {log.read_text(errors='replace')}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "img", help="where the PNGs go")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    import refind
    from refind.loaders import iter_sessions

    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="refind-shots-") as tmp:
        index = Path(tmp) / "index"
        with refind.Memory(index) as mem:
            mem.import_sessions(iter_sessions(ROOT / "examples" / "data" / "chat_history.jsonl"))
        proc, url = _start_ui(index, Path(tmp) / "ui.log")
        try:
            with sync_playwright() as pw:
                context = pw.chromium.launch_persistent_context(
                    str(Path(tmp) / "profile"), executable_path=_chromium(), headless=True, args=FLAGS,
                    viewport={"width": 1000, "height": 760},
                )  # fmt: skip
                page = context.new_page()
                page.goto(url)
                page.screenshot(path=str(args.out / "ui-home.png"))
                page.fill("input[name=q]", QUESTION)
                page.press("input[name=q]", "Enter")
                page.wait_for_url(re.compile(r"/search\?q="))
                page.screenshot(path=str(args.out / "ui-search.png"))
                search_url = page.url
                question, since, until, asof = PERIOD
                page.fill("input[name=q]", question)
                page.fill("header input[name=since]", since)
                page.fill("header input[name=until]", until)
                page.fill("header input[name=asof]", asof)
                page.select_option("header select[name=order]", "time")
                page.press("input[name=q]", "Enter")
                page.wait_for_url(re.compile(r"asof="))
                page.screenshot(path=str(args.out / "ui-period.png"))
                page.goto(search_url)
                page.locator("section.session h2 a").first.click()
                page.wait_for_url(re.compile(r"/session/"))
                page.evaluate("window.scrollTo(0, 0)")  # the title, not only the hit the link jumped to
                page.screenshot(path=str(args.out / "ui-session.png"))
                context.close()
        finally:
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=30)
    for name in SHOTS:
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
