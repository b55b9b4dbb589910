"""Long-running processes shipped with the package and run in the cluster.

Each service is its own package with a console entry point and a container build. Services
may use `api` and the Kubernetes client; they never import `planning`, `components`,
`program`, `cli` or Pulumi (import-linter enforces it): they are not the program.
"""
