"""Wires the stored fit in force into the service: every replica's Decider follows the
active row of `decision_fits` (LISTEN/NOTIFY, `fit_store`), and `/ready` names its source
and held-out figures."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from litestar.datastructures import State

from service.decide.calibration import CalibrationModel
from service.decide.decider import Decider
from service.fit_store import FitStore
from service.state import AppState

LEARNING_KEY = "learning"


@dataclass
class Learning:
    store: FitStore
    decider: Decider

    def source(self) -> str | None:
        """Where the fit that decides under `calibrated` comes from (None: no fit applies)."""
        model = self.decider.active_calibration()
        if model is None:
            return None
        if model is self.decider.portable:
            return "portable"
        return "review" if self.store.model is not None and model is self.store.model else "file"

    def held_out(self) -> dict[str, Any] | None:
        """The fit from review that decides: on how many reviewed queries, its held-out figures."""
        active = self.store.active
        if active is None or self.source() != "review":
            return None
        f = active.figures
        return {"fit_id": active.id, "reviewed": f.get("reviewed"), "fitted_on": f.get("fitted_on"),
                "held_out": f.get("held_out"), "phase": f.get("phase"), "fit": f.get("fit"),
                "baseline": f.get("baseline")}


def connect_learning(st: AppState, decider: Decider) -> Learning:
    """The fit store follows the database; the Decider follows the store (with no stored fit
    active, the fit file decides again, else the portable one)."""
    file_model, file_error = decider.own, decider.own_error

    def on_change(model: CalibrationModel | None, error: str | None) -> None:
        if model is not None:
            decider.use_own(model)
        else:
            decider.use_own(file_model, error or file_error)

    learning = Learning(store=FitStore(on_change=on_change), decider=decider)
    st.on_pool_ready.append(learning.store.start)
    st.on_shutdown.append(learning.store.stop)
    st.decision = dataclasses.replace(st.decision, source=learning.source, held_out=learning.held_out)
    return learning


def learning_of(state: State) -> Learning:
    value = state[LEARNING_KEY]
    assert isinstance(value, Learning)
    return value
