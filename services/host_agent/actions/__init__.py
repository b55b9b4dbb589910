"""One module per HostOperation action; `ACTIONS` maps each action to its implementation."""
