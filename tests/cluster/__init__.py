"""A real Kubernetes API server for the tests that need the Kubernetes API itself: etcd and
kube-apiserver at the versions of scripts/toolchain/versions.env (tests/toolchain.py)."""
