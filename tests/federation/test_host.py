"""ClientHost: builds clients on use, keeps a bounded number built, keeps every state."""

from typing import ClassVar

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


class BatchedAccumulator(Accumulator):
    """An accumulator that declares its messages batchable and records the groups it is handed."""

    groups: ClassVar[list[list[int]]] = []

    def batch_key(self, message: Message) -> str:
        return "add"

    @classmethod
    def handle_many(cls, jobs):  # type: ignore[no-untyped-def]
        cls.groups.append([job.context.client_id for job in jobs])
        return super().handle_many(jobs)


def test_batchable_messages_are_handled_together_at_most_cache_clients_at_a_time() -> None:
    # Prepare
    BatchedAccumulator.groups = []

    # Execute
    batched = _run(ClientHost(lambda c: BatchedAccumulator(), seed=0, cache=3), rounds=2)

    # Assert
    assert batched == _run(ClientHost(lambda c: Accumulator(), seed=0), rounds=2)
    assert BatchedAccumulator.groups == [[0, 1, 2], [0, 1, 2]]  # client 3 alone each round: handled by handle
