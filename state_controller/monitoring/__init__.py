"""What a platform team installs next to the controller: alert rules, Grafana dashboards and
the metrics catalogue, each generated from the code that defines what they read
(``state-controller gen``) and checked by the tests against the files in the repository."""
