"""Commands name the extra to install when its packages are missing: the service's
`eval-decisions` / `fit-decisions` (`eval` extra) and the lab's `eval` / `bench` (`lab` extra)."""

from __future__ import annotations

import subprocess
import sys

from lab.__main__ import COMMAND_EXTRAS as LAB_EXTRAS
from service.extras import missing_extra


def test_a_missing_package_names_the_extra_and_the_install_line() -> None:
    message = missing_extra("fit-decisions", find=lambda name: None if name == "sklearn" else object())
    assert message is not None
    assert "`python -m service fit-decisions`" in message
    assert "`eval` extra" in message and "missing: sklearn" in message
    assert "pip install -e '.[eval]'" in message


def test_a_lab_command_names_the_lab_extra() -> None:
    message = missing_extra(
        "eval", find=lambda name: None if name == "ranx" else object(), table=LAB_EXTRAS, program="python -m lab"
    )
    assert message is not None
    assert "`python -m lab eval`" in message
    assert "`lab` extra" in message and "missing: ranx" in message
    assert "pip install -e '.[lab]'" in message


def test_commands_without_an_extra_and_a_complete_install_pass() -> None:
    assert missing_extra("serve", find=lambda name: None) is None
    assert missing_extra("eval-decisions", find=lambda name: object()) is None
    assert missing_extra("bench", find=lambda name: object(), table=LAB_EXTRAS) is None
    # The lab's commands are not the service's: `python -m service` has no `eval` to check.
    assert missing_extra("eval", find=lambda name: None) is None


def _hiding(module: str, entry: str, argv: list[str]) -> subprocess.CompletedProcess[str]:
    """Run `entry.main(argv)` with `module` hidden: what a user without the extra has."""
    code = (
        "import sys, importlib.abc\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name == {module!r}:\n"
        "            raise ModuleNotFoundError(name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        f"from {entry} import main\n"
        f"sys.exit(main({argv!r}))\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_the_lab_cli_stops_before_running_when_the_extra_is_missing() -> None:
    result = _hiding("ranx", "lab.__main__", ["eval", "--dataset", "nowhere"])
    assert result.returncode == 2, result.stderr
    assert "'.[lab]'" in result.stderr


def test_the_service_cli_stops_before_running_when_the_extra_is_missing() -> None:
    result = _hiding("sklearn", "service.__main__", ["fit-decisions", "--queries", "nowhere.yaml"])
    assert result.returncode == 2, result.stderr
    assert "'.[eval]'" in result.stderr
