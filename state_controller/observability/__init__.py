"""What leaves the process and what is counted: metrics (:mod:`.metrics`), Events, traces,
logs, the HTTP endpoints (``/metrics`` and its authentication, the probes), the API client
and provisioner as instrumented, and the reporter that hands them the books' journal."""
