"""App instances: their HelmReleases, Gateway access objects and status. Pure."""
