"""A function named by "module:attribute" imports its module when first called, not when named."""

from __future__ import annotations

import inspect
import pickle
import subprocess
import sys

from fedmosaic.deferred import Deferred


def test_a_call_passes_through_to_the_named_function() -> None:
    # Prepare
    shorten = Deferred("textwrap:shorten")

    # Execute
    text = shorten("one two three four", width=10)

    # Assert
    assert text == "one [...]"
    assert shorten.module == "textwrap"


def test_its_signature_is_the_named_function_s() -> None:
    # Execute
    signature = inspect.signature(Deferred("textwrap:shorten"))

    # Assert
    assert list(signature.parameters) == ["text", "width", "kwargs"]


def test_naming_a_function_imports_nothing_until_it_is_called() -> None:
    # Prepare
    probe = (
        "import sys\n"
        "from fedmosaic.deferred import Deferred\n"
        "fraction = Deferred('fractions:Fraction')\n"
        "print('fractions' in sys.modules, end=' ')\n"
        "fraction(1, 2)\n"
        "print('fractions' in sys.modules)\n"
    )

    # Execute
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)

    # Assert
    assert done.stdout.split() == ["False", "True"]


def test_it_pickles_by_name_for_worker_processes() -> None:
    # Execute
    copy = pickle.loads(pickle.dumps(Deferred("textwrap:shorten")))

    # Assert
    assert copy == Deferred("textwrap:shorten")
    assert copy("a b c d e f", width=8) == "a [...]"
