"""Planning for KubeAI-backed model activations."""
