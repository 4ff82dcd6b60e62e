"""Where the controller's objects live, behind one interface (:mod:`.interface`): the
embedded store (:mod:`.embedded`) or a Kubernetes API server (:mod:`.kube`)."""
