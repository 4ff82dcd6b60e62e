"""Storage backends behind one interface: the embedded store and (later) Kubernetes."""
