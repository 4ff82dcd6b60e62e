"""What any controller needs, whatever it reconciles: informers, the work queue and its
keys, leader election, outages told once, reconcile results, the reporter protocol."""
