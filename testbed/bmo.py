"""baremetal-operator played by a test: the product's own played operator
(:mod:`state_controller.simulation.baremetal_operator`, which the observe-mode demo runs
too), named here where the tests have always found it."""

from state_controller.simulation.baremetal_operator import IMAGE, PlayedBMO, bmo_conditions

__all__ = ["IMAGE", "PlayedBMO", "bmo_conditions"]
