"""Test set-up: Qt offscreen before any Qt import; no test touches the user's real
settings, run history or keyring; no test reaches the network."""

import os
import tempfile

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["FLOWDESK_TESTING"] = "1"
# One throw-away data and config folder for the whole session (subprocesses inherit it).
_root = tempfile.mkdtemp(prefix="flowdesk-tests-")
os.environ["FLOWDESK_DATA_DIR"] = os.path.join(_root, "data")
os.environ["FLOWDESK_CONFIG_DIR"] = os.path.join(_root, "config")
