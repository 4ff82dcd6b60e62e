"""A Node's side: the Node reconciler (a Node's own book) and the pods of cordoned nodes."""
