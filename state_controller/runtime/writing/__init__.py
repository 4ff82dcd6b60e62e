"""How a reconcile's outcome leaves: the one status writer, the book writer every
reconcile ends with, and the delivery record kept between steps."""
