"""The product's CLI serves and operates; the research instruments are `python -m lab`."""

from __future__ import annotations

import argparse

import pytest

from lab.__main__ import build_parser as lab_parser
from service.__main__ import build_parser as service_parser

OPERATOR = {"serve", "migrate", "seed", "replay", "export-goldens", "eval-decisions", "fit-decisions"}
LAB = {"eval", "eval-kinds", "bench", "load", "adapt-model", "train-relevance", "eval-relevance"}


def _commands(parser: argparse.ArgumentParser) -> set[str]:
    subparsers = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(subparsers) == 1
    return set(subparsers[0].choices)


def test_each_entry_point_has_its_own_commands() -> None:
    service = _commands(service_parser())
    assert service >= OPERATOR  # serving commands may be added (mcp); the lab's may not
    assert service.isdisjoint(LAB)
    assert _commands(lab_parser()) == LAB


@pytest.mark.parametrize("command", sorted(LAB))
def test_the_service_refuses_a_lab_command(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        service_parser().parse_args([command])
    assert stopped.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
