"""client-go's families, under client-go's names so that existing dashboards work
unchanged: the API client's requests and the leader election's status."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REST_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)  # client-go's


class ClientGoMetrics:
    """``rest_client_*`` and ``leader_election_master_status``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.rest_requests = Counter(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            ["code", "host", "method"],
            registry=registry,
        )
        self.rest_latency = Histogram(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            ["verb", "host"],
            buckets=REST_BUCKETS,
            registry=registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates "
            "backup, 1 indicates master. 'name' is the string used to identify the lease.",
            ["name"],
            registry=registry,
        )

    def leading(self, lease: str, leads: bool) -> None:
        """``leader_election_master_status``. A process that runs without leader election
        reconciles alone, so it reports itself leading: "no replica leads" then still
        means no controller reconciles."""
        self.leader.labels(lease).set(1 if leads else 0)
