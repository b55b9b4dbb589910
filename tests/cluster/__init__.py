"""A real kube-apiserver (v1.20.2) and etcd for the tests that need the Kubernetes API itself."""
