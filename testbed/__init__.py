"""What the tests and the benchmarks run against: a real control plane, Ironic behind a
Redfish BMC emulator, Prometheus, the peers played as their sources say they behave, and
the waiting, clocks and samples around them. Every process started here is stopped by its
starter."""
