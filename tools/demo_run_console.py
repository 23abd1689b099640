"""A window with the run console alone, on a sample flow, offline.

    python -m tools.demo_run_console [FLOW] [--provider echo|streaming] [--word-delay S] [--auto]

The default provider, ``streaming``, answers like the echo provider but streams its
answer word by word (``--word-delay`` seconds apart), so the live log has something to
show; ``echo`` is the engine's own instant echo. ``--auto`` presses Run at start-up.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from engine import AgentInvocation, EchoProvider, LLMResult, ProviderContext, load_workflow

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


class StreamingEcho:
    """The echo provider's answer, streamed word by word (subagent calls included)."""

    name = "streaming-echo"

    def __init__(self, word_delay: float = 0.05) -> None:
        self.word_delay = word_delay
        self._echo = EchoProvider()

    async def complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        result = await self._echo.complete(invocation, ctx)
        words = result.text.split(" ")
        for i, word in enumerate(words):
            ctx.delta(word if i == 0 else " " + word)
            await asyncio.sleep(self.word_delay)
        return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("flow", nargs="?", default=str(SAMPLES / "review.flow.json"))
    p.add_argument("--provider", choices=("streaming", "echo"), default="streaming")
    p.add_argument("--word-delay", type=float, default=0.05)
    p.add_argument("--auto", action="store_true", help="press Run at start-up")
    p.add_argument("--width", type=int, default=1300)
    p.add_argument("--height", type=int, default=820)
    p.add_argument("--tab", choices=("entry", "subagents", "node"), default="entry", help="the details tab shown")
    args = p.parse_args(argv)

    import qasync
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow

    from editor.run.console import RunConsole

    app = QApplication.instance() or QApplication(sys.argv[:1])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)

    workflow = load_workflow(args.flow)
    win = QMainWindow()
    base_title = f"Run console — {workflow.display_name()}"
    win.setWindowTitle(base_title)
    console = RunConsole()
    provider = StreamingEcho(args.word_delay) if args.provider == "streaming" else EchoProvider()
    console.set_resolver_factory(lambda: provider)
    console.set_workflow(workflow, args.flow)
    console.waiting_for_input_changed.connect(
        lambda waiting: win.setWindowTitle(("⏸ Waiting for approval — " if waiting else "") + base_title)
    )
    console.tabs.setCurrentIndex(("entry", "subagents", "node").index(args.tab))
    win.setCentralWidget(console)
    win.resize(args.width, args.height)
    win.show()
    if args.auto:
        QTimer.singleShot(300, console.start_run)
    with loop:
        loop.run_forever()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
