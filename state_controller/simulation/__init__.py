"""What stands in for the world outside the controller in the demo, the tests and the
benchmarks: kubelets and update agents writing Nodes (:mod:`.nodes`), a fleet of Hosts
with their BMC Secrets (:mod:`.fleet`), a rolling update across it (:mod:`.rollout`), a
firmware rollout (:mod:`.firmware_rollout`), and baremetal-operator writing BareMetalHosts
(:mod:`.baremetal_operator`), a whole fleet of them for the observe-mode demo
(:mod:`.bmo_fleet`).

The simulated *hardware* is a provisioner backend and lives with the others, in
:mod:`state_controller.provisioning.simulated`.
"""
