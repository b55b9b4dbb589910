"""End to end with the real Pulumi engine: the CLI, the Kubernetes provider and the program, against the test API server."""
