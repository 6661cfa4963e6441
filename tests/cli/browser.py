"""Headless Chromium, driven through the DevTools protocol over a pipe (``--remote-debugging-pipe``).

No Node, no Playwright, no websocket: Chromium reads commands from file descriptor 3 and writes its
answers to file descriptor 4, one JSON object each, ended by a NUL byte. ``Browser`` starts it and
opens pages; ``Page`` navigates, evaluates JavaScript (awaiting promises), sets the viewport, fills a
file input and prints to PDF.

``CHROMIUM`` is the binary (``chromium``, ``chromium-browser`` or ``google-chrome`` on PATH, or
``$POKDENG_CHROMIUM``). Under ``CI=true`` a missing Chromium fails the tests that need one; elsewhere
they are skipped with the reason.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = (
    os.environ.get("POKDENG_CHROMIUM")
    or shutil.which("chromium")
    or shutil.which("chromium-browser")
    or shutil.which("google-chrome")
)
IN_CI = os.environ.get("CI") == "true"

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None and not IN_CI, reason="Chromium is not installed (apt-get install chromium)"
)

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--mute-audio",
)


class BrowserError(RuntimeError):
    pass


class Browser:
    """One headless Chromium for a test module: ``with Browser() as browser: page = browser.page()``."""

    def __init__(self, timeout: float = 60.0) -> None:
        if CHROMIUM is None:
            raise BrowserError("CI=true: Chromium must be installed (.ci/run installs it)")
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="pokdeng-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:
            """In the child, before exec: its fd 3 reads our commands and its fd 4 writes the answers.
            (The pipes' own fds are not inheritable: exec closes them. They are first moved above 9, so
            that neither is overwritten when the other is put at 3 or 4.)"""
            high_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD_CLOEXEC, 10)
            high_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD_CLOEXEC, 10)
            os.dup2(high_r, 3)  # (inheritable: it stays open across exec)
            os.dup2(high_w, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,  # (no thread of ours runs in the child before exec)
            close_fds=False,  # (every fd of ours is non-inheritable, PEP 446: exec closes them)
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self.version = self.call("Browser.getVersion")["product"]

    # the protocol ---------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message).encode() + b"\0"
        while data:
            written = os.write(self._to_chrome, data)
            data = data[written:]

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 16)
                if not chunk:
                    raise BrowserError(f"Chromium closed its pipe (exit code {self.process.poll()})")
                self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if session is not None:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read(deadline)
            if answer.get("id") == ident:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error']}")
                result: dict[str, Any] = answer.get("result", {})
                return result
            self._events.append(answer)

    def page(self, width: int = 1200, height: int = 900, mobile: bool = False) -> Page:
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        page = Page(self, target, session)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.viewport(width, height, mobile)
        return page

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close")
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=20)
        for fd in (self._to_chrome, self._from_chrome):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._profile.cleanup()

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    def __init__(self, browser: Browser, target: str, session: str) -> None:
        self.browser = browser
        self.target = target
        self.session = session

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        return self.browser.call(method, self.session, **params)

    def viewport(self, width: int, height: int, mobile: bool = False) -> None:
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=mobile)

    def open(self, path: Path) -> None:
        """Load a file and wait until its document is complete."""
        self.call("Page.navigate", url=path.resolve().as_uri())
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str) -> Any:
        """The value of ``expression`` (a promise is awaited), as JSON gives it back."""
        answer = self.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in answer:
            details = answer["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"{expression[:80]}: {text}")
        return answer["result"].get("value")

    def errors(self) -> list[str]:
        """The uncaught JavaScript exceptions of this page so far."""
        return [
            e["params"]["exceptionDetails"].get("exception", {}).get("description", "an exception")
            for e in self.browser._events
            if e.get("method") == "Runtime.exceptionThrown" and e.get("sessionId") == self.session
        ]

    def wait_for(self, condition: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(condition)
            if value:
                return value
            if self.errors():
                raise BrowserError(f"the page's script failed: {self.errors()[0]}")
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {condition}")
            time.sleep(0.05)

    def verdict(self, runs: int = 1) -> dict[str, Any]:
        """Wait for the in-browser check's verdict (its ``runs``-th) and read it from the page."""
        self.wait_for(f"Number(document.documentElement.dataset.runs || 0) >= {runs}")
        value: dict[str, Any] = self.evaluate(
            "(() => { const v = window.PokdengPage.state.verdict; const d = document.documentElement.dataset;"
            " return {ok: v.ok, failed: v.failed, checks: v.checks, warnings: v.warnings, verdict: d.verdict,"
            " dom_failed: d.failed, status: document.getElementById('browser-status').textContent,"
            " listed: Array.from(document.querySelectorAll('#browser-checks li'), li => li.textContent)}; })()"
        )
        return value

    def set_file(self, selector: str, path: Path) -> None:
        document = self.call("DOM.getDocument")["root"]["nodeId"]
        node = self.call("DOM.querySelector", nodeId=document, selector=selector)["nodeId"]
        self.call("DOM.setFileInputFiles", files=[str(path.resolve())], nodeId=node)

    def media(self, media: str) -> None:
        self.call("Emulation.setEmulatedMedia", media=media)

    def pdf(self) -> bytes:
        return base64.b64decode(self.call("Page.printToPDF", printBackground=True)["data"])

    def screenshot(self) -> bytes:
        return base64.b64decode(self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"])

    def close(self) -> None:
        self.browser.call("Target.closeTarget", targetId=self.target)
