"""Tests of the reconcile trigger: pure rules, then the trigger against the real API server.

Helpers: `world` (the PKO Stack CRD and Stacks, the objects the trigger watches, playing their
controllers, bounded waits). The fault proxy of tests/faults stands between the trigger and the
server where a test needs a 410 or a broken connection.
"""
