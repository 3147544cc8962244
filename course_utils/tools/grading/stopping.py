"""How ``course-grade`` stops when it is told to: Ctrl-C (SIGINT) and a scheduler's cancel
(SIGTERM: Slurm's ``scancel`` and a job's time limit send it, then SIGKILL some 30 s later;
Kubernetes does the same) are handled alike.

Within :func:`on_signals`, either signal raises :class:`Interrupted` (a ``KeyboardInterrupt``)
in the grader's main thread, once: :func:`.batch.grade_folder` then kills every running worker
with its kernel (:func:`.supervise.stop_all`), each worker's thread removes its memory cgroup and
its temporary copy of the student's notebook, and nothing is written, so the earlier gradebook
stays as it was. A second signal while that clean-up runs (about 2 s) is ignored,
so that it is not cut short. A signal that lands while the outputs are being written waits until
they are whole (:func:`held`): the output folder holds the earlier run's files or this run's,
never a mixture. Only SIGKILL, which no process can catch, leaves anything behind.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

__all__ = ["SIGNALS", "Interrupted", "held", "on_signals"]

#: The signals that stop a grading run cleanly: Ctrl-C, and a scheduler's (or ``kill``'s).
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(KeyboardInterrupt):
    """The run was stopped by the signal ``signum``; ``outputs_written`` when it landed while
    the outputs were written and they were completed first."""

    def __init__(self, signum: int, outputs_written: bool = False) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum, self.outputs_written = signum, outputs_written

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """What a shell reports for a process ended by the signal: 130 (SIGINT), 143 (SIGTERM),
        so that a scheduler records the task as failed."""
        return 128 + self.signum


class _State:
    def __init__(self) -> None:
        self.active = False  # within on_signals
        self.stopping = False  # a signal has been acted on: later ones are ignored
        self.holding = 0  # within held(): a signal waits
        self.pending: int | None = None  # the signal that waited
        self.written = False  # a held() block has run to its end: the outputs are whole


_state = _State()


def _handle(signum: int, frame: FrameType | None) -> None:
    if _state.stopping:
        return  # the clean-up of the first signal is running: let it finish
    if _state.holding:
        _state.pending = _state.pending or signum
        return
    _state.stopping = True
    raise Interrupted(signum, outputs_written=_state.written)


@contextmanager
def on_signals() -> Iterator[None]:
    """Within it, SIGINT and SIGTERM raise :class:`Interrupted` in the main thread (once);
    the handlers that were there before are put back at the end. Call it from the main thread
    (Python runs signal handlers there only)."""
    if threading.current_thread() is not threading.main_thread():
        raise RuntimeError("on_signals() must be entered from the main thread")
    before = {s: signal.getsignal(s) for s in SIGNALS}
    _state.active, _state.stopping, _state.holding, _state.pending = True, False, 0, None
    _state.written = False
    try:
        for s in SIGNALS:
            signal.signal(s, _handle)
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        _state.active = False


@contextmanager
def held() -> Iterator[None]:
    """A signal that lands within waits until the block has run (the outputs are written whole),
    then raises :class:`Interrupted` with ``outputs_written``. Outside :func:`on_signals` it
    changes nothing."""
    if not _state.active:
        yield
        return
    _state.holding += 1
    try:
        yield
        _state.written = True
    finally:
        _state.holding -= 1
    if not _state.holding and _state.pending is not None and not _state.stopping:
        _state.stopping = True
        raise Interrupted(_state.pending, outputs_written=True)
