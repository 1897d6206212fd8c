"""``--watch``: show a view again each time it changes, until Ctrl-C.

On a terminal the screen is cleared and redrawn (like ``watch``); in a pipe each changed
view is printed after the last, so a log shows every change. Under ``-o json|yaml`` each
changed document is printed, one after the other (like ``kubectl get -w -o json``).
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Any

from reconciler.cli import output

INTERVAL = 2.0  # seconds between two looks: the state store is read, nothing is polled
_CLEAR = "\x1b[H\x1b[2J"


def watch(
    args: argparse.Namespace,
    read: Callable[[argparse.Namespace], list[dict[str, Any]]],
    show: Callable[[list[dict[str, Any]]], None],
) -> int:
    shown: str | None = None
    stream = output.raw(sys.stdout)
    isatty = getattr(stream, "isatty", None)
    terminal = bool(isatty and isatty())
    try:
        while True:
            data = read(args)
            buffer = io.StringIO()
            with redirect_stdout(buffer):
                if args.json:
                    output.print_json({"projects": data})
                else:
                    show(data)
            text = buffer.getvalue()
            if text != shown:
                if terminal:
                    stream.write(_CLEAR)
                elif shown is not None and not args.json:
                    sys.stdout.write("\n")
                # Captured past the escaping layer (and without colour): escaped here.
                stream.write(output.escape(text))
                stream.flush()
                shown = text
            time.sleep(INTERVAL)
    except KeyboardInterrupt:
        return output.EXIT_OK
