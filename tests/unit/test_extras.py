"""`eval` and `bench` name the extra to install when its packages are missing."""

from __future__ import annotations

import subprocess
import sys

from service.extras import missing_extra


def test_a_missing_package_names_the_extra_and_the_install_line() -> None:
    message = missing_extra("eval", find=lambda name: None if name == "ranx" else object())
    assert message is not None
    assert "`eval` extra" in message and "missing: ranx" in message
    assert "pip install -e '.[eval]'" in message


def test_commands_without_an_extra_and_a_complete_install_pass() -> None:
    assert missing_extra("serve", find=lambda name: None) is None
    assert missing_extra("bench", find=lambda name: object()) is None


def test_the_cli_stops_before_running_when_the_extra_is_missing() -> None:
    # A meta-path finder that hides ranx: what a user without the extra has.
    code = (
        "import sys, importlib.abc\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'ranx':\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from service.__main__ import main\n"
        "sys.exit(main(['eval', '--dataset', 'nowhere']))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert "'.[eval]'" in result.stderr
