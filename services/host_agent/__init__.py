"""The host agent: runs as root on each node, publishes its host evidence and plans, carries out
its node's HostOperations with a recovery journal, and creates the first ApplianceSetup/local.
See README.md."""
