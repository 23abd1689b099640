"""Smoke test of an installed Flowdesk wheel (run by .ci/run; not collected by pytest).

Run it with the Python of a fresh virtual environment where the wheel (not the checkout) is
installed, from a folder that is not the checkout, so nothing is imported from the source
tree. It needs the fake OpenAI-compatible server, which is plain standard library:

    python wheel_smoke.py --fake-server /path/to/tests/fakes/openai_server.py

Checks: the package is the installed one; every sample validates; the hello sample runs with
echo and against the fake server (through the ``flowdesk`` console script); the GUI starts
offscreen with its window icon, style sheet (whose ``url()`` files exist), samples (welcome
page and Open Sample), every catalogue provider in Run ▸ LLM Provider, the action icons, and
the first-run dialog's help text. Prints one line per check; exits 1 at the first failure.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHECKS: list[str] = []


def ok(what: str) -> None:
    CHECKS.append(what)
    print(f"ok  {what}", flush=True)


def fail(what: str) -> None:
    print(f"FAIL {what}", flush=True)
    sys.exit(1)


def check(cond: object, what: str) -> None:
    ok(what) if cond else fail(what)


def flowdesk(*args: str) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("flowdesk")
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"}
    )


def load_fake_server(path: str):
    spec = importlib.util.spec_from_file_location("flowdesk_smoke_fake_server", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def check_installed(checkout: Path | None) -> None:
    import engine

    where = Path(engine.__file__).resolve()
    check(Path(sys.prefix).resolve() in where.parents, f"engine is imported from the installed wheel ({where})")
    if checkout is not None:
        check(checkout.resolve() not in where.parents, "not from the checkout")


def check_cli(fake_server_path: str) -> None:
    from engine import sample_paths

    samples = sample_paths()
    check(len(samples) >= 3 and all(p.is_file() for p in samples), f"samples installed: {[p.name for p in samples]}")
    for path in samples:
        res = flowdesk("validate", str(path))
        check(
            res.returncode == 0 and " 0 errors" in res.stdout,
            f"flowdesk validate {path.name}: {res.stdout.strip()}"
            if res.returncode == 0
            else f"flowdesk validate {path.name}: exit {res.returncode} {res.stderr}",
        )
    hello = next(p for p in samples if p.name == "hello.flow.json")
    res = flowdesk("run", str(hello), "--provider", "echo")
    check(
        res.returncode == 0 and "completed" in res.stderr,
        f"flowdesk run hello --provider echo (exit {res.returncode})"
        + ("" if res.returncode == 0 else f": {res.stderr}"),
    )
    fake = load_fake_server(fake_server_path)
    with fake.FakeLLMServer() as server:
        server.handler = fake.local_server_handler(("smoke-model",), answer="Hello from the fake server.")
        res = flowdesk("run", str(hello), "--base-url", server.base_url, "--jsonl")
        answers = [json.loads(x) for x in res.stdout.splitlines() if x.strip()]
        said = [a["content"] for a in answers if a["type"] == "llm_response"]
        passed = res.returncode == 0 and said == ["Hello from the fake server."]
        errors = [a["content"] for a in answers if a["type"] in ("llm_error", "error")]
        check(
            passed,
            "flowdesk run hello --base-url (fake OpenAI-compatible server)"
            + (
                ""
                if passed
                else f": exit {res.returncode}, answers {said}, errors {errors}, "
                f"{len(server.requests)} request(s) seen, stderr {res.stderr!r}"
            ),
        )
        # a provider of the catalogue, reached where the server is (the first-run choice)
        from engine.llm.discovery import FoundServer, probe_servers, remember_choice

        found = probe_servers([("ollama", server.port)], timeout=2)
        check([s.models for s in found] == [("smoke-model",)], "the probe finds the server")
        remember_choice("ollama", found[0])
        res = flowdesk("run", str(hello), "--jsonl")
        check(
            res.returncode == 0 and "Hello from the fake server." in res.stdout,
            "flowdesk run hello with the remembered default provider (ollama at the fake server)",
        )
        assert isinstance(found[0], FoundServer)
    res = flowdesk("validate", str(hello), "--json")
    check(res.returncode == 0, "flowdesk validate --json")


def check_gui() -> None:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    from PySide6.QtWidgets import QApplication, QPushButton

    from editor.app import configure_app
    from editor.first_run import FirstRunDialog
    from editor.main_window import MainWindow
    from editor.resources import icon_path
    from engine import ProviderSurvey, available_providers, read_resource_text, sample_paths
    from engine.llm.config import load_catalogue

    app = QApplication.instance() or QApplication(["flowdesk"])
    configure_app(app)
    sheet = app.styleSheet()
    urls = re.findall(r"url\(([^)]+)\)", sheet)
    check(len(sheet) > 1000, f"style sheet applied ({len(sheet)} characters)")
    check(all(Path(u.strip("'\"")).is_file() for u in urls), f"its {len(urls)} url() files exist")
    win = MainWindow()
    win.show()
    app.processEvents()
    check(not win.windowIcon().isNull(), "window icon")
    for name in ("app", "run", "open", "save", "sample", "node-agent", "node-approval"):
        path = icon_path(name)
        if not (path and Path(path).is_file()):
            fail(f"icon {name}: {path!r}")
    check(not win.act_run.icon().isNull(), "action icons (run, open, save, sample, node icons)")
    names = sorted(p.name for p in sample_paths())
    buttons = [b for b in win.welcome.findChildren(QPushButton) if b.objectName() == "sampleButton"]
    check(len(win.welcome.sample_buttons) == len(names) and buttons, f"welcome page samples: {len(buttons)} buttons")
    actions = [a for a in win.sample_menu.actions() if a.text()]
    check(len(actions) == len(names), f"File ▸ Open Sample: {[a.text() for a in actions]}")
    check(win.files.open_sample(str(sample_paths()[0])) and win.document.workflow.nodes, "a sample opens")
    win.provider_menu.aboutToShow.emit()
    shown = {a.data() for a in win.provider_menu.actions() if a.data()}
    catalogue = {p.id for p in load_catalogue()[0]}
    check(
        catalogue <= shown and set(available_providers()) <= shown and len(catalogue) >= 6,
        f"Run ▸ LLM Provider lists every provider: {sorted(shown)}",
    )
    text = read_resource_text("help", "first-run.md")
    dialog = FirstRunDialog(ProviderSurvey(key_vars=["OPENAI_API_KEY"]), win)
    check("language model" in text and dialog.list.count() == 1, "first-run help text and dialog")
    win.close()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fake-server", required=True, help="path of tests/fakes/openai_server.py")
    ap.add_argument("--checkout", help="the source checkout, which must not be imported")
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp(prefix="flowdesk-wheel-smoke-"))
    os.environ["FLOWDESK_CONFIG_DIR"] = str(home / "config")
    os.environ["FLOWDESK_DATA_DIR"] = str(home / "data")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL"):
        os.environ.pop(name, None)
    check_installed(Path(args.checkout) if args.checkout else None)
    check_cli(args.fake_server)
    check_gui()
    print(f"wheel smoke test: {len(CHECKS)} checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
