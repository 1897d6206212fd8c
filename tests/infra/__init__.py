"""Test infrastructure: real servers on loopback (PostgreSQL, a Kubernetes control plane, a
test kubelet, a fault-injecting proxy) and the tests that prove each of them works."""
