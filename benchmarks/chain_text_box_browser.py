"""The chain page's "Edit p and q as text" in headless chromium, en and zh: closed, no text box is drawn; opened,
a refused p table is answered under "Apply the text" (st.error naming the field, the text kept), a good one is
applied, "+ slot" keeps the box open with the new row, closing it removes the boxes. Prints one line per check and
saves screenshots (open / refused / applied, per language) into OUT.

    PYTHONPATH=. /work/main/.venv/bin/python benchmarks/chain_text_box_browser.py [OUT]   (default /tmp/chain_text_box)
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/chain_text_box")
OUT.mkdir(parents=True, exist_ok=True)
from playwright.sync_api import sync_playwright  # noqa: E402
from tests.conftest import CHROMIUM, CHROMIUM_ARGS, start_app_server, wait_for_app  # noqa: E402

LABEL = {"en": "Edit p and q as text", "zh": "以文本编辑 p 与 q"}
APPLY = {"en": "Apply the text", "zh": "应用文本"}
OK = {"en": re.compile(r"^Applied: p and q"), "zh": re.compile(r"^已应用")}  # not "Nothing was applied"
with start_app_server(OUT / "server.log") as url, sync_playwright() as pw:
    b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    for lang in ("en", "zh"):
        page = b.new_page(viewport={"width": 1280, "height": 2400})
        page.goto(f"{url}/chain_sampling")
        wait_for_app(page)
        if lang == "zh":
            page.locator('[data-testid="stSidebar"] label').filter(has_text="简体中文").first.click()
            wait_for_app(page)
        box = page.locator('[data-testid="stExpander"]').filter(has_text=LABEL[lang])
        print(lang, "closed: text areas", page.locator("textarea").count())
        box.locator("summary").first.click()
        wait_for_app(page)
        areas = box.locator("textarea")
        print(lang, "open: text areas", areas.count(), "p =", repr(areas.nth(0).input_value()))
        page.screenshot(path=OUT / f"open_{lang}.png")
        bad = "0.5 0.4 0.2 0\n0.2 0.5 0.3 0"
        areas.nth(0).fill(bad)
        box.get_by_role("button", name=APPLY[lang]).click()
        wait_for_app(page)
        err = box.locator('[data-testid="stAlertContentError"]')
        print(lang, "refused: errors in box", err.count(), "|", err.first.inner_text()[:90].replace("\n", " ") if err.count() else "",
              "| all errors", page.locator('[data-testid="stAlertContentError"]').count(), "| kept:", areas.nth(0).input_value() == bad)
        page.screenshot(path=OUT / f"refused_{lang}.png")
        areas.nth(0).fill("0.5 0.3 0.2 0\n0.2 0.5 0.3 0")
        box.get_by_role("button", name=APPLY[lang]).click()
        wait_for_app(page)
        try:  # the success note (the answer's last element: it may land a moment after the run's end)
            box.get_by_text(OK[lang]).first.wait_for(timeout=10_000)
        except Exception:  # noqa: BLE001  (reported as 0 below)
            pass
        print(lang, "applied: success notes", box.get_by_text(OK[lang]).count(), "errors", page.locator('[data-testid="stAlertContentError"]').count(),
              "p now", repr(box.locator("textarea").nth(0).input_value()))
        page.screenshot(path=OUT / f"applied_{lang}.png")
        # an edit with the box open keeps it open; close it: the text areas go
        page.get_by_role("button", name=re.compile(r"^\+ ")).first.click()
        wait_for_app(page)
        print(lang, "after + slot (open): p rows", len(box.locator("textarea").nth(0).input_value().splitlines()))
        box.locator("summary").first.click()
        wait_for_app(page)
        print(lang, "closed again: text areas", page.locator("textarea").count())
        page.close()
    b.close()
