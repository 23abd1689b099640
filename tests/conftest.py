"""Test set-up: Qt offscreen before any Qt import; no test reaches the network."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# Keep tests away from the user's real settings, data and keyring.
os.environ.setdefault("FLOWDESK_TESTING", "1")
