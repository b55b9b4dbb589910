"""The repository's shell scripts, run as subprocesses the way a developer or CI runs them."""
