"""ClientHost: builds clients on use, keeps a bounded number built, keeps every state."""

import numpy as np

from fedmosaic.federation import ClientContext, ClientLogic, ClientState, Message
from fedmosaic.federation.host import ClientHost


class Accumulator(ClientLogic):
    """Adds the received value to a running sum kept in its state."""

    def handle(self, message: Message, state: ClientState, context: ClientContext) -> Message:
        total = state.arrays.get("sum", np.zeros(1000)) + message.arrays["w"]
        state.arrays["sum"] = total
        return Message(arrays={"sum": total})


def _run(host: ClientHost, rounds: int = 3) -> list[float]:
    sums = []
    for rnd in range(1, rounds + 1):
        replies = host.handle_all({c: Message(arrays={"w": np.full(1000, float(rnd))}) for c in range(4)}, rnd)
        sums.extend(float(r.arrays["sum"][0]) for r in replies.values())
    return sums


def test_a_small_cache_rebuilds_clients_but_keeps_their_states() -> None:
    # Prepare
    built: list[int] = []

    def factory(client: int) -> Accumulator:
        built.append(client)
        return Accumulator()

    # Execute
    small = _run(ClientHost(factory, seed=0, cache=2))
    rebuilt = len(built)
    built.clear()
    unbounded = _run(ClientHost(factory, seed=0))
    # Assert
    assert small == unbounded
    assert rebuilt == 12
    assert len(built) == 4


def test_states_past_the_memory_budget_go_to_disk_without_changing_results() -> None:
    host = ClientHost(lambda c: Accumulator(), seed=0, state_budget_bytes=2 * 8000)
    assert _run(host) == _run(ClientHost(lambda c: Accumulator(), seed=0))
    assert host.states.spilled == [0, 1]
    host.close()
