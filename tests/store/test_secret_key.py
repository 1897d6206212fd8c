"""The generated secret key: made once, shared by every process that starts on the state
directory at the same moment."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from reconciler.store.crypto import open_vault


def test_processes_starting_together_on_a_new_state_dir_share_one_key(tmp_path: Path) -> None:
    state = tmp_path / "state"
    start = threading.Barrier(8)
    vaults = []

    def open_one() -> None:
        start.wait()
        vaults.append(open_vault("", state))

    threads = [threading.Thread(target=open_one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    token = vaults[0].encrypt("hunter2")
    assert [vault.decrypt(token) for vault in vaults] == ["hunter2"] * 8
    assert [p.name for p in state.iterdir()] == ["secret.key"]  # nothing left aside
    assert stat.S_IMODE((state / "secret.key").stat().st_mode) == 0o600
    assert open_vault("", state).decrypt(token) == "hunter2"  # and it is the key from now on
