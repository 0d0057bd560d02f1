"""The C extension beside pyproject.toml (which has everything else): the `gomoku`
strategy's search core. Optional: without a C compiler the install goes on, and
`bots.strategy("gomoku")` plays the same moves in Python, 25 to 30 times slower."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "bots.strategies._gomoku_core",
            ["bots/strategies/_gomoku_core.c"],
            extra_compile_args=["-O3", "-std=c11"],
            optional=True,
        )
    ]
)
