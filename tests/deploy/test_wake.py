"""A SuperNode's signal wakes its worker at once; a signal nobody hears is dropped; names never collide."""

import threading
import time

from fedmosaic.deploy.wake import WakeListener, new_wake_name, send_wake


def test_a_signal_wakes_the_listener_and_every_waiting_signal_is_consumed_at_once() -> None:
    # Prepare
    name = new_wake_name()
    with WakeListener(name) as listener:
        send_wake(name)
        send_wake(name)

        # Execute
        woken = listener.wait(5.0)
        again = listener.wait(0.01)

    # Assert
    assert (woken, again) == (True, False)


def test_a_listener_waiting_is_woken_by_a_signal_sent_meanwhile() -> None:
    # Prepare
    name = new_wake_name()
    with WakeListener(name) as listener:
        sender = threading.Timer(0.05, send_wake, args=(name,))
        sender.start()

        # Execute
        start = time.monotonic()
        woken = listener.wait(30.0)

    # Assert
    sender.join()
    assert woken
    assert time.monotonic() - start < 30.0


def test_a_signal_with_no_listener_is_dropped_without_error() -> None:
    send_wake(new_wake_name())


def test_two_names_are_never_the_same_and_a_listener_hears_only_its_own() -> None:
    # Prepare
    first, second = new_wake_name(), new_wake_name()
    with WakeListener(first) as listener:
        # Execute
        send_wake(second)

        # Assert
        assert first != second
        assert not listener.wait(0.01)
