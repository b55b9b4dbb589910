"""Entry point of `pulumi up` / `pulumi preview`: settings -> observe -> plan -> declare."""

from program.main import run

run()
