"""Which document the window shows: none (the welcome page) or one, told apart from the
documents shown before it by a serial.

The serial is how work started on one document (a run, a check or an autosave on a worker
thread) knows, when it ends, whether its document is still the one shown. The files
controller changes it; the others only read it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class DocumentSession:
    has_document: bool = False
    serial: int = 0  # bumped each time a document replaces the one shown

    def next_document(self) -> int:
        self.serial += 1
        return self.serial
